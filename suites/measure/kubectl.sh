#!/bin/sh
# A script of kubectl calls, as a user would measure one:
#   harness measure --name kubectl-script -- sh suites/measure/kubectl.sh
# KUBECONFIG is the harness's (the `workload` identity); `kubectl` is the
# cluster's own release. Creates a namespace and a ConfigMap, runs a Job of
# 4 pods to completion, reads what it made, then deletes the Job.
set -eu
ns=script-${HARNESS_RUN_ID:-run}
kubectl create namespace "$ns"
kubectl -n "$ns" create configmap settings --from-literal=size=4
kubectl -n "$ns" create job work --image=registry.k8s.io/pause:3.10 -o yaml --dry-run=client \
  | sed 's/^spec:/spec:\n  completions: 4\n  parallelism: 4/' \
  | kubectl -n "$ns" apply -f -
kubectl -n "$ns" wait --for=condition=complete job/work --timeout=120s
kubectl -n "$ns" get pods -l job-name=work -o name
kubectl -n "$ns" delete job work --wait=true
