"""The write path's policies: redaction, classification, entity extraction, admission."""
