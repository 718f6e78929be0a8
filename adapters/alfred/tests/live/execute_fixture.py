#!/usr/bin/env python3
"""Writes fixtures/clusters/execute-move-pays.json: the first example of docs/design-scoring.md#worked-examples, where a move pays.

Four 8-GPU H100 nodes: two OMENative Instances of 2 GPUs (`chat/alpha` on gpu-h100-01,
`chat/beta` on gpu-h100-02, steady and movable), a non-OME 8-GPU Job pod on gpu-h100-03, a 4-GPU
non-OME pod on gpu-h100-04, and one 8-GPU pod in `chat` pending since 07:40 (20 min at
`--now 2026-11-29T08:00:00Z`). With defaults and `migration.apiVersion: v1` the pool scores above
the threshold and one Instance is worth moving next to the 4-GPU pod.

Uses the helpers of fixtures/generate_clusters.py (same shapes, same time base). Run:
`python3 adapters/alfred/tests/live/execute_fixture.py`.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../../fixtures"))

import generate_clusters as g  # noqa: E402


def execute_move_pays():
    nodes = [g.node(f"gpu-h100-{i:02d}", models=[g.cbm_label(g.LLAMA)]) for i in range(1, 5)]
    items = nodes + [g.cbm(g.LLAMA, "hf://meta-llama/Llama-3.1-8B-Instruct")]
    items += g.single_pod_omenative("chat", "alpha", g.LLAMA, "srt-llama-3-1-8b-instruct", ["gpu-h100-01"], 2)
    items += g.single_pod_omenative("chat", "beta", g.LLAMA, "srt-llama-3-1-8b-instruct", ["gpu-h100-02"], 2)
    items.append(g.plain_pod("batch", "train-0", "gpu-h100-03", 8, owner="train"))
    items.append(g.plain_pod("batch", "eval-0", "gpu-h100-04", 4, owner="eval"))
    items.append(g.plain_pod("chat", "big-0", "", 8, owner="big"))
    items[-1]["status"] = g.pod_status("", pending_since=g.at(40))
    g.write("execute-move-pays.json", items)


if __name__ == "__main__":
    execute_move_pays()
