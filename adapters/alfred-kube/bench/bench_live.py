#!/usr/bin/env python3
"""`cargo xtask bench-live`: alfred's cold start at scale against a real kube-apiserver (issue 7).

Run by `cargo xtask bench-live` (which starts a private API server, builds `alfred` in release and
passes the paths); not a test, never in CI. Steps:

1. load N 8-GPU nodes (created, then patched Ready with `nvidia.com/gpu` allocatable through
   `/status`) and P GPU pods bound by `spec.nodeName` (status Running), with a bounded number of
   concurrent requests;
2. the floor: a plain list of all pods and all nodes from the same server (one GET each, the
   whole JSON body read), best of three;
3. `alfred run` cold start (shipped RBAC, its own ServiceAccount token): time from spawn to the
   first decision record (`last-cycle.json` in `alfred-recommendations`), and its peak RSS
   (`VmHWM` of /proc/<pid>/status) at that moment and 10 s later.

Prints one JSON object with the figures.
"""

import argparse
import concurrent.futures as cf
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml


class Api:
    def __init__(self, kubeconfig):
        kc = yaml.safe_load(open(kubeconfig))
        self.server = kc["clusters"][0]["cluster"]["server"]
        self.token = kc["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=kc["clusters"][0]["cluster"]["certificate-authority"])

    def req(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.server + path, data=data, method=method,
                                   headers={"Authorization": "Bearer " + self.token, "Content-Type": ctype})
        for attempt in range(5):
            try:
                with urllib.request.urlopen(r, context=self.ctx, timeout=120) as resp:
                    return resp.status, resp.read()
            except urllib.error.HTTPError as e:
                if e.code == 409 and method == "POST":
                    return 409, b""
                if e.code in (429, 500, 503, 504) and attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:300]!r}")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise


def docs(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


PLURALS = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
           "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings",
           "ConfigMap": "configmaps", "CustomResourceDefinition": "customresourcedefinitions"}


def create(api, d):
    av, kind = d["apiVersion"], d["kind"]
    base = "/api/v1" if av == "v1" else f"/apis/{av}"
    ns = d["metadata"].get("namespace")
    path = f"{base}/namespaces/{ns}/{PLURALS[kind]}" if ns and kind not in ("Namespace",) else f"{base}/{PLURALS[kind]}"
    api.req("POST", path, d)


def node(i, gpus):
    name = f"bench-gpu-{i:05d}"
    return name, {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": str(gpus), "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
            "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    }, {"status": {
        "capacity": {"cpu": "224", "memory": "2000Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
        "allocatable": {"cpu": "222", "memory": "1990Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "lastHeartbeatTime": "2026-11-29T07:00:00Z", "lastTransitionTime": "2026-11-29T07:00:00Z"}]}}


def pod(i, node_name, gpus):
    name = f"train-{i:06d}"
    r = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)}
    return name, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": f"job-{i // 5}"}},
        "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                                                        "resources": {"requests": r, "limits": r}}],
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    }, {"status": {"phase": "Running", "startTime": "2026-11-29T07:01:00Z", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T07:05:00Z"},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T07:00:00Z"}]}}


def load(api, nodes, pods_per_node, concurrency):
    t0 = time.time()
    merge = "application/merge-patch+json"

    def one_node(i):
        name, body, status = node(i, 8)
        api.req("POST", "/api/v1/nodes", body)
        # The server taints new nodes not-ready and no controller lifts it: the spec as recorded.
        api.req("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": body["spec"]["taints"]}}, merge)
        api.req("PATCH", f"/api/v1/nodes/{name}/status", status, merge)

    def one_pod(i):
        name, body, status = pod(i, f"bench-gpu-{i // pods_per_node:05d}", 1 + (i % 2))
        api.req("POST", "/api/v1/namespaces/bench/pods", body)
        api.req("PATCH", f"/api/v1/namespaces/bench/pods/{name}/status", status, merge)

    with cf.ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(one_node, range(nodes)))
        t1 = time.time()
        list(ex.map(one_pod, range(nodes * pods_per_node)))
    return t1 - t0, time.time() - t1


def floor(api):
    best = None
    for _ in range(3):
        t = time.time()
        _, p = api.req("GET", "/api/v1/pods")
        _, n = api.req("GET", "/api/v1/nodes")
        d = time.time() - t
        best = d if best is None else min(best, d)
        sizes = (len(p), len(n))
    return best, sizes


def vmhwm(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--admin", required=True)
    ap.add_argument("--alfred-kubeconfig", required=True)
    ap.add_argument("--alfred", required=True)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=16)
    a = ap.parse_args()
    api = Api(a.admin)
    for f in sorted(os.listdir(os.path.join(a.root, "fixtures/crds"))):
        if f.endswith(".yaml"):
            for d in docs(os.path.join(a.root, "fixtures/crds", f)):
                create(api, d)
    for f in ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml"]:
        for d in docs(os.path.join(a.root, "deploy", f)):
            create(api, d)
    create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
    # A reused server still holds the previous run's record and lease: start from neither, or
    # the record is "found" at once.
    for path in ["/api/v1/namespaces/ome/configmaps/alfred-recommendations",
                 "/apis/coordination.k8s.io/v1/namespaces/ome/leases/alfred.ome.io"]:
        try:
            api.req("DELETE", path)
        except RuntimeError as e:
            if ": 404 " not in str(e):
                raise
    create(api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "alfred-recommendations", "namespace": "ome"}})
    # The shipped ConfigMap holds the defaults; the record is what the bench waits for.
    time.sleep(2)  # CRDs established
    existing = json.loads(api.req("GET", "/api/v1/nodes?limit=1")[1])
    if not existing["items"]:
        t_nodes, t_pods = load(api, a.nodes, a.pods_per_node, a.concurrency)
    else:
        t_nodes = t_pods = None
    t_floor, sizes = floor(api)

    work = tempfile.mkdtemp(prefix="alfred-bench-live-")
    log = open(os.path.join(work, "alfred.log"), "w")
    env = dict(os.environ, POD_NAME="alfred-bench", RUST_LOG="warn")
    t0 = time.time()
    proc = subprocess.Popen([a.alfred, "run", "--kubeconfig", a.alfred_kubeconfig, "--namespace", "ome",
                             "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    first = None
    try:
        while time.time() - t0 < 600:
            if proc.poll() is not None:
                raise SystemExit(f"alfred exited: see {log.name}")
            _, body = api.req("GET", "/api/v1/namespaces/ome/configmaps/alfred-recommendations")
            if "last-cycle.json" in (json.loads(body).get("data") or {}):
                first = time.time() - t0
                break
            time.sleep(0.05)
        hwm_first = vmhwm(proc.pid)
        time.sleep(10)
        hwm_later = vmhwm(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    print(json.dumps({
        "nodes": a.nodes, "pods": a.nodes * a.pods_per_node,
        "load_seconds": {"nodes": t_nodes, "pods": t_pods},
        "floor_seconds": round(t_floor, 3), "list_bytes": {"pods": sizes[0], "nodes": sizes[1]},
        "first_record_seconds": None if first is None else round(first, 3),
        "ratio_to_floor": None if first is None else round(first / t_floor, 2),
        "peak_rss_mb_at_first_record": hwm_first, "peak_rss_mb_10s_later": hwm_later,
        "alfred_log": log.name,
    }, indent=2))


if __name__ == "__main__":
    sys.exit(main())
