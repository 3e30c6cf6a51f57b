"""The parts of the Inspector, one module per concern; ``taskq.queues.engine.inspector.Inspector`` puts them together
and stays the one entry point (import from there, not from here).

Nothing is imported here, so that a module that needs one part (``events`` needs ``QueueInfo``) loads only it.
"""
