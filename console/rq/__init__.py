"""The console's view of django-rq queues: the migration path for teams moving from RQ to taskq.

``bridge`` reads and acts on the queues configured in django-rq's ``RQ_QUEUES`` through RQ's own API (queues,
registries, ``Job``); ``views`` and ``urls`` serve them under ``/rq/``. Nothing here touches taskq's own keys.
"""
