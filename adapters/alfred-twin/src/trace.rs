//! Reading the Alibaba GPU trace (cluster-trace-gpu-v2023, "openb"): the GPU node list and a
//! pod list. Paths come from the command line; nothing is copied.
//!
//! * Nodes: `sn,cpu_milli,memory_mib,gpu,model`; nodes without GPUs or model are skipped.
//!   Pools are the `model` values.
//! * Pods: `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
//!   creation_time,deletion_time,scheduled_time]`. A task with `num_gpu = 0` and
//!   `gpu_milli > 0` shares a GPU and counts as one whole GPU; tasks without any GPU are
//!   dropped (the twin only models GPU work). `gpu_spec` (`V100M16|V100M32`) limits the
//!   pools; empty means any pool.

use anyhow::{Context, Result, bail};

/// A GPU node of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceNode {
    /// `sn`.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: i64,
    /// `memory_mib`.
    pub memory_mib: i64,
    /// `gpu`.
    pub gpus: u32,
    /// `model` (the pool).
    pub model: String,
}

/// A GPU task of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceTask {
    /// `name`.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: i64,
    /// `memory_mib`.
    pub memory_mib: i64,
    /// Whole GPUs asked (a sharing task asks one).
    pub gpus: u32,
    /// Allowed GPU models; empty = any.
    pub gpu_spec: Vec<String>,
    /// `creation_time` (s), when the list has times.
    pub creation: Option<i64>,
    /// `deletion_time` (s), when the list has times.
    pub deletion: Option<i64>,
}

fn columns(header: &str) -> Vec<String> {
    header
        .trim()
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect()
}

fn col(cols: &[String], name: &str) -> Option<usize> {
    cols.iter().position(|c| c == name)
}

/// Parses the node list text.
pub fn parse_nodes(text: &str) -> Result<Vec<TraceNode>> {
    let mut lines = text.lines();
    let cols = columns(lines.next().context("empty node list")?);
    let need = |n: &str| col(&cols, n).with_context(|| format!("node list has no column {n:?}"));
    let (sn, cpu, mem, gpu, model) = (
        need("sn")?,
        need("cpu_milli")?,
        need("memory_mib")?,
        need("gpu")?,
        need("model")?,
    );
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let get = |k: usize| f.get(k).copied().unwrap_or("");
        let gpus: u32 = get(gpu).parse().unwrap_or(0);
        if gpus == 0 || get(model).is_empty() {
            continue;
        }
        out.push(TraceNode {
            name: get(sn).to_owned(),
            cpu_milli: get(cpu)
                .parse()
                .with_context(|| format!("node line {}: cpu_milli", i + 2))?,
            memory_mib: get(mem)
                .parse()
                .with_context(|| format!("node line {}: memory_mib", i + 2))?,
            gpus,
            model: get(model).to_owned(),
        });
    }
    if out.is_empty() {
        bail!("node list has no GPU node");
    }
    Ok(out)
}

/// Parses a pod list text (GPU tasks only, in file order).
pub fn parse_pods(text: &str) -> Result<Vec<TraceTask>> {
    let mut lines = text.lines();
    let cols = columns(lines.next().context("empty pod list")?);
    let need = |n: &str| col(&cols, n).with_context(|| format!("pod list has no column {n:?}"));
    let (name, cpu, mem, ngpu, milli) = (
        need("name")?,
        need("cpu_milli")?,
        need("memory_mib")?,
        need("num_gpu")?,
        need("gpu_milli")?,
    );
    let spec = col(&cols, "gpu_spec");
    let created = col(&cols, "creation_time");
    let deleted = col(&cols, "deletion_time");
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let get = |k: usize| f.get(k).copied().unwrap_or("");
        let num: u32 = get(ngpu)
            .parse()
            .with_context(|| format!("pod line {}: num_gpu", i + 2))?;
        let m: i64 = get(milli).parse().unwrap_or(0);
        let gpus = if num == 0 && m > 0 { 1 } else { num };
        if gpus == 0 {
            continue;
        }
        let gpu_spec = spec
            .map(get)
            .filter(|s| !s.is_empty())
            .map(|s| s.split('|').map(str::to_owned).collect())
            .unwrap_or_default();
        out.push(TraceTask {
            name: get(name).to_owned(),
            cpu_milli: get(cpu).parse().unwrap_or(0),
            memory_mib: get(mem).parse().unwrap_or(0),
            gpus,
            gpu_spec,
            creation: created.and_then(|k| get(k).parse().ok()),
            deletion: deleted.and_then(|k| get(k).parse().ok()),
        });
    }
    if out.is_empty() {
        bail!("pod list has no GPU task");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_skip_cpu_only_and_keep_models() {
        let n =
            parse_nodes("sn,cpu_milli,memory_mib,gpu,model\na,32000,1024,0,\nb,64000,2048,8,G2\n")
                .unwrap();
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].model, "G2");
        assert_eq!(n[0].gpus, 8);
    }

    #[test]
    fn pods_count_sharing_as_one_and_drop_cpu_tasks() {
        let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
p0,1000,100,1,1000,,LS,Running,0,50,0\n\
p1,1000,100,0,460,,LS,Running,5,60,5\n\
p2,1000,100,0,0,,LS,Running,5,60,5\n\
p3,1000,100,8,1000,V100M16|V100M32,LS,Running,7,90,7\n";
        let p = parse_pods(text).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].gpus, 1);
        assert_eq!(
            p[2].gpu_spec,
            vec!["V100M16".to_owned(), "V100M32".to_owned()]
        );
        assert_eq!(p[2].creation, Some(7));
        let short =
            parse_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nq,1,1,2,1000\n").unwrap();
        assert_eq!(short[0].creation, None);
        assert!(short[0].gpu_spec.is_empty());
    }
}
