//! `cargo xtask replay-dump`: writes a large synthetic cluster as `kubectl get nodes,pods -o
//! json` (or `-o yaml`) prints it, to measure what `alfred replay` needs at scale
//! (benches/RESULTS.md, "Bounded work per input"). Generated, never committed: at 100,000 nodes and 1,000,000 pods
//! the JSON is over a gigabyte.
//!
//! The objects carry what a real API server returns (uids, resource versions, owner references,
//! container statuses, managed-field-free), so the bytes per object are realistic; every value
//! derives from the object's index, so two runs write the same file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

const USAGE: &str = "\
usage: cargo xtask replay-dump [--nodes N] [--pods M] [--yaml] OUT

  writes a List of N GPU nodes (8 GPUs each; default 100000) and M running pods spread evenly
  over them (default 1000000; six per node ask for 1 GPU, the others for none) to OUT, as
  JSON, or with --yaml as one YAML document (kubectl -o yaml's form)
";

pub(crate) fn main(args: &[String]) -> Result<()> {
    let mut nodes = 100_000usize;
    let mut pods = 1_000_000usize;
    let mut yaml = false;
    let mut out = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |flag: &str| -> Result<usize> {
            let value = it
                .next()
                .with_context(|| format!("{flag} needs a number"))?;
            value
                .parse()
                .with_context(|| format!("{flag} {value:?} is not a whole number"))
        };
        match arg.as_str() {
            "--nodes" => nodes = number("--nodes")?,
            "--pods" => pods = number("--pods")?,
            "--yaml" => yaml = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            other if other.starts_with('-') => bail!("unknown flag {other:?}\n\n{USAGE}"),
            other => out = Some(PathBuf::from(other)),
        }
    }
    let Some(out) = out else {
        bail!("no output file given\n\n{USAGE}");
    };
    if nodes == 0 && pods > 0 {
        bail!("--pods needs at least one node to bind them to");
    }
    let file =
        std::fs::File::create(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let items = (0..nodes)
        .map(node)
        .chain((0..pods).map(|i| pod(i, pods, nodes)));
    if yaml {
        w.write_all(b"apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n")?;
        for item in items {
            write_yaml_item(&mut w, &item)?;
        }
    } else {
        w.write_all(b"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[")?;
        for (i, item) in items.enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut w, &item)?;
        }
        w.write_all(b"]}\n")?;
    }
    w.flush()?;
    let bytes = std::fs::metadata(&out)?.len();
    println!(
        "{}: {nodes} nodes, {pods} pods, {:.1} MB",
        out.display(),
        bytes as f64 / 1e6
    );
    Ok(())
}

fn node_name(i: usize) -> String {
    format!("gpu-{i:06}")
}

fn node(i: usize) -> Value {
    let name = node_name(i);
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "uid": uid(1, i), "resourceVersion": (40_000_000 + i).to_string(),
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
                "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
                "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
            },
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "224", "memory": "2000Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "222", "memory": "1990Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                 "lastHeartbeatTime": "2026-11-29T07:59:00Z", "lastTransitionTime": "2026-11-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "lastHeartbeatTime": "2026-11-29T07:59:00Z", "lastTransitionTime": "2026-11-01T00:00:00Z"},
            ],
            "addresses": [{"type": "InternalIP", "address": ip(10, i)}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.33.2", "containerRuntimeVersion": "containerd://2.0.5",
                         "osImage": "Ubuntu 22.04.5 LTS", "architecture": "amd64"},
        },
    })
}

/// Pod `i` of `pods`, on node `i / per_node` (the pods spread evenly); on each node the first
/// six ask for one GPU each and the others for none, so no node is overcommitted.
fn pod(i: usize, pods: usize, nodes: usize) -> Value {
    let per_node = pods.div_ceil(nodes);
    let name = format!("job-{:06}-worker-{}", i / 4, i % 4);
    let gpus = if i % per_node < 6 { "1" } else { "0" };
    let resources = json!({"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpus});
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": format!("team-{}", i % 50), "uid": uid(2, i),
            "resourceVersion": (50_000_000 + i).to_string(),
            "creationTimestamp": "2026-11-29T07:00:00Z",
            "labels": {"app": format!("job-{:06}", i / 4), "batch.kubernetes.io/job-name": format!("job-{:06}", i / 4),
                       "controller-uid": uid(3, i / 4)},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("job-{:06}", i / 4),
                                 "uid": uid(3, i / 4), "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "nodeName": node_name(i / per_node),
            "schedulerName": "default-scheduler", "restartPolicy": "Never", "priority": 0,
            "containers": [{
                "name": "main", "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                "command": ["python", "-m", "train"],
                "env": [{"name": "RANK", "value": (i % 4).to_string()}, {"name": "WORLD_SIZE", "value": "4"}],
                "resources": {"requests": resources, "limits": resources},
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            }],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": "Running", "hostIP": ip(10, i / per_node), "podIP": ip(11, i),
            "startTime": "2026-11-29T07:01:00Z", "qosClass": "Guaranteed",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T07:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T07:05:00Z"},
            ],
            "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                                   "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                                   "state": {"running": {"startedAt": "2026-11-29T07:04:00Z"}}}],
        },
    })
}

fn uid(kind: usize, i: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{i:012x}")
}

fn ip(net: usize, i: usize) -> String {
    format!("{net}.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// One List item in block YAML, under `items:`. Strings are written double-quoted with JSON's
/// escapes, which YAML reads the same.
fn write_yaml_item(w: &mut impl Write, item: &Value) -> Result<()> {
    write_yaml(w, item, 2, true)
}

fn write_yaml(w: &mut impl Write, value: &Value, indent: usize, list_item: bool) -> Result<()> {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (i, (k, v)) in map.iter().enumerate() {
                let lead = if list_item && i == 0 {
                    format!("{}- ", &pad[..indent - 2])
                } else {
                    pad.clone()
                };
                write!(w, "{lead}{}:", yaml_key(k)?)?;
                write_nested(w, v, indent + 2)?;
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                if v.as_object().is_some_and(|m| !m.is_empty()) {
                    write_yaml(w, v, indent + 2, true)?;
                } else {
                    write!(w, "{pad}-")?;
                    write_nested(w, v, indent + 2)?;
                }
            }
        }
        scalar => writeln!(w, "{pad}{}", serde_json::to_string(scalar)?)?,
    }
    Ok(())
}

/// A key plain when it is a simple name (as kubectl prints keys), else double-quoted.
fn yaml_key(k: &str) -> Result<String> {
    let plain = k.starts_with(|c: char| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-'));
    Ok(if plain {
        k.to_owned()
    } else {
        serde_json::to_string(k)?
    })
}

/// A member's value after `key:` (or `-`): scalars and empty collections inline, others below.
fn write_nested(w: &mut impl Write, v: &Value, indent: usize) -> Result<()> {
    match v {
        Value::Object(m) if !m.is_empty() => {
            writeln!(w)?;
            write_yaml(w, v, indent, false)
        }
        Value::Array(a) if !a.is_empty() => {
            writeln!(w)?;
            write_yaml(w, v, indent - 2, false)
        }
        scalar => {
            writeln!(w, " {}", serde_json::to_string(scalar)?)?;
            Ok(())
        }
    }
}
