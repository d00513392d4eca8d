"""The deploy suite (make test-deploy): deploy/kubernetes rendered offline and validated against
the Kubernetes and KEDA schemas of pinned npm packages, what the manifests must say (two
brokers, autoscaling on the queues, budgets, policies, drain, a persistent and bounded Redis),
the compose file, and the settings the three forms must agree on."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
