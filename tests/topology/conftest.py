"""Makes the fixtures of ``topology_support`` visible to this folder's tests (they import helpers from there)."""

from topology_support import redis_cluster, replicated_cluster, sentinel_topology, topology_worker  # noqa: F401
