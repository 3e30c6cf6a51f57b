"""``python -m bench.peers <peer> <workload> [options]``, from the repository root, with the peers' venv (the peers:
the keys of ``PEERS`` below). The peer module is imported by its package name, so that the task names its worker
sees match."""

import importlib
import sys

from . import harness

PEERS = {
    "dramatiq": ("dramatiq_peer", "peer"),
    "huey": ("huey_peer", "peer"),
    "celery": ("celery_peer", "peer"),
    "rq": ("rq_peer", "peer"),
    "rq-fork": ("rq_peer", "peer_fork"),
    "taskiq": ("taskiq_peer", "peer"),
    "streaq": ("streaq_peer", "peer"),
    "saq": ("saq_peer", "peer"),
    "bullmq": ("bullmq_peer", "peer"),
}

if len(sys.argv) < 2 or sys.argv[1] not in PEERS:
    sys.exit(f"usage: python -m bench.peers {{{'|'.join(PEERS)}}} <workload> [options]  (--help for options)")
module_name, attribute = PEERS[sys.argv.pop(1)]
harness.main(getattr(importlib.import_module(f"bench.peers.{module_name}"), attribute))
