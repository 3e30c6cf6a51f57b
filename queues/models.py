"""Models for queue definitions, unique-key and retention policies, and periodic tasks (none yet)."""
