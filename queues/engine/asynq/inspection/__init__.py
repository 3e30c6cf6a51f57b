"""The inspector's parts over asynq's keys: reads and operator actions with asynq's ``Inspector`` semantics."""
