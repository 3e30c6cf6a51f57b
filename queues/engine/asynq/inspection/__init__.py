"""The Inspector's parts over asynq's keys: each a class with the method names, signatures and return types of the
taskq part it stands in for (``queues/engine/inspection/``), reading asynq's layout (``asynq/keys.py``) through the
core's broker, and the operator actions with asynq's ``Inspector`` semantics (``task_actions``).
``Inspector(..., key_format="asynq")`` builds them.

What asynq's format cannot hold (workflows, waiting tasks, time series, per-type counts, event timelines beyond a
task's last error, the records of acted-on tasks) reads as the honest empty answer where a reader already shows
"none", and raises ``FormatUnsupportedError`` where an empty answer would mislead.
"""
