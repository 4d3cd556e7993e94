"""Lifecycle policies: pure functions that decide; the engine applies their decisions."""
