"""What every layer may share: data types, settings, errors, limits, scope, and surface-neutral helpers
that hold no business logic. Nothing here imports the engine, storage or a surface."""
