"""The worker process: fetch/execute/ack loop and its background components."""
