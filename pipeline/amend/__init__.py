"""Changes to a finished run: drop rows and backfill, apply a blocklist."""
