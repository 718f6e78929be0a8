//! Room questions over a prepared cluster: place a pod where the scheduler would and keep it
//! there, and count how many copies of a pod still fit on a set of nodes. Used to size what a
//! cluster can still take (a capacity report), where a move's simulation asks only whether
//! one set of pods lands. Pending competitors and nominations play no part here: the caller
//! places whatever should go first with [`PreparedCluster::place`].

use std::collections::BTreeSet;

use super::PreparedCluster;
use crate::config::Profile;
use crate::model::{PodInfo, pod_info};
use crate::objects::Pod;
use crate::outcome::Failure;

/// A point [`PreparedCluster::rollback_to`] returns the cluster to, taking back every pod
/// [`PreparedCluster::place`] kept after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint(usize);

impl PreparedCluster {
    /// The cluster as it is now, to return to.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint(self.pods.len())
    }

    /// Takes back every pod placed since `checkpoint` (one of this cluster's, taken since).
    pub fn rollback_to(&mut self, checkpoint: Checkpoint) {
        self.rollback(checkpoint.0);
    }

    /// Places `pod` (unbound; its name is not checked against the cluster's) where the
    /// scheduler's filters and scores put it, every node a candidate, and keeps it there: later
    /// questions see it as occupancy. The node's name, or `None` when no node fits. `Err` when
    /// the model cannot hold the cluster or the pod (the `Unsupported` cases of a simulation).
    pub fn place(&mut self, profile: &Profile, pod: &Pod) -> Result<Option<String>, Failure> {
        let info = self.fit_info(pod)?;
        let none = BTreeSet::new();
        match self.schedule_one(&info, None, &none, profile, false) {
            Ok((n, _)) => {
                self.add_pod(info, n);
                Ok(Some(self.nodes[n].name.clone()))
            }
            Err(_) => Ok(None),
        }
    }

    /// Places `copies` copies of `pod` one after another, each as [`Self::place`] would (a
    /// copy's name plays no part in where it lands): where each landed, `None` for one no
    /// node holds. When the pod has no pod (anti-)affinity terms and no topology spread
    /// constraints, a copy changes only its own node's filters and resource scores, so the
    /// nodes are filtered and scored once and only the chosen node again after each copy
    /// (all are scored again when the chosen node stops fitting, as normalized scores depend
    /// on which nodes fit); otherwise each copy is a full cycle.
    pub fn place_copies(
        &mut self,
        profile: &Profile,
        pod: &Pod,
        copies: u32,
    ) -> Result<Vec<Option<String>>, Failure> {
        let info = self.fit_info(pod)?;
        let cy = self.pre_filter(&info, profile);
        let mut out = Vec::new();
        if info.has_affinity_terms() || !cy.constraints.is_empty() || !self.held.is_empty() {
            for _ in 0..copies {
                out.push(self.place(profile, pod)?);
            }
            return Ok(out);
        }
        // With no terms and no spread, the cycle's precomputation does not change as copies
        // are added: other pods' anti-affinity terms that match the pod stay as they were.
        let mut feasible: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| self.filter(&info, n, &cy, profile).is_ok())
            .collect();
        let mut totals = self.score(&info, &feasible, &cy, profile, None);
        for _ in 0..copies {
            let best = totals.iter().copied().max().unwrap_or(0);
            // Feasible nodes are in index (name) order: the first best is the smallest name.
            let Some(at) = totals.iter().position(|t| *t == best) else {
                out.push(None);
                continue;
            };
            let n = feasible[at];
            let before = self.occupancy_score(&info, n, profile);
            self.add_pod(info.clone(), n);
            out.push(Some(self.nodes[n].name.clone()));
            if self.filter(&info, n, &cy, profile).is_ok() {
                // Only the chosen node's resource scores moved.
                totals[at] += self.occupancy_score(&info, n, profile) - before;
            } else {
                // The feasible set changed, and with it the normalized scores.
                feasible.remove(at);
                totals = if feasible.is_empty() {
                    Vec::new()
                } else {
                    self.score(&info, &feasible, &cy, profile, None)
                };
            }
        }
        Ok(out)
    }

    /// How many copies of `pod` still fit on the nodes named in `nodes` (other names are
    /// ignored), counting at most `limit`. Copies are placed one after another where the
    /// scheduler would put each (filters and scores, ties to the smallest name), so pod
    /// (anti-)affinity, hard topology spread and host ports between the copies count. When the
    /// pod has none of those, a node's copies do not depend on each other and the count is the
    /// sum over the nodes that pass the filters of the copies their free resources and pod
    /// slots hold: the same number, found in one pass. The cluster is left unchanged.
    pub fn count_fitting(
        &mut self,
        profile: &Profile,
        pod: &Pod,
        nodes: &BTreeSet<String>,
        limit: u32,
    ) -> Result<u32, Failure> {
        let info = self.fit_info(pod)?;
        let candidates: Vec<usize> = nodes
            .iter()
            .filter_map(|name| self.node_index.get(name).copied())
            .collect();
        if candidates.is_empty() || limit == 0 {
            return Ok(0);
        }
        let cy = self.pre_filter(&info, profile);
        let independent = info.aff_req.is_empty()
            && info.anti_req.is_empty()
            && info.ports.is_empty()
            && !cy.constraints.iter().any(|c| c.hard);
        if independent {
            let mut total: i64 = 0;
            for &n in &candidates {
                if self.filter(&info, n, &cy, profile).is_ok() {
                    total = total.saturating_add(self.copies_fitting(&info, n));
                    if total >= i64::from(limit) {
                        return Ok(limit);
                    }
                }
            }
            return Ok(u32::try_from(total).unwrap_or(limit).min(limit));
        }
        let base = self.pods.len();
        let none = BTreeSet::new();
        let mut placed = 0;
        while placed < limit {
            match self.schedule_one(&info, Some(&candidates), &none, profile, false) {
                Ok((n, _)) => {
                    self.add_pod(info.clone(), n);
                    placed += 1;
                }
                Err(_) => break,
            }
        }
        self.rollback(base);
        Ok(placed)
    }

    /// The pod as the model holds it, or why the model cannot hold it or the cluster.
    pub(super) fn fit_info(&self, pod: &Pod) -> Result<PodInfo, Failure> {
        if let Some(f) = &self.unsupported {
            return Err(f.clone());
        }
        let mut info = pod_info(pod, &self.ns_labels, true)?;
        self.index(&mut info);
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use crate::objects::{Cluster, Node, Pod};
    use crate::{PreparedCluster, Profile};

    fn node(name: &str, gpus: u32, zone: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110",
                                       "nvidia.com/gpu": gpus.to_string()}}
        }))
        .expect("node")
    }

    fn pod(name: &str, gpus: u32, extra: serde_json::Value) -> Pod {
        let mut v = json!({
            "metadata": {"namespace": "ml", "name": name, "labels": {"app": "chat"}},
            "spec": {"containers": [{"name": "c", "resources":
                {"requests": {"cpu": "1", "nvidia.com/gpu": gpus.to_string()}}}]}
        });
        if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
            for (k, x) in extra {
                spec.insert(k.clone(), x.clone());
            }
        }
        serde_json::from_value(v).expect("pod")
    }

    fn cluster() -> PreparedCluster {
        let c = Cluster {
            nodes: vec![node("a", 8, "z1"), node("b", 8, "z1"), node("c", 4, "z2")],
            ..Cluster::default()
        };
        PreparedCluster::new(&c, "default-scheduler").expect("prepared")
    }

    fn all() -> BTreeSet<String> {
        ["a", "b", "c"].map(String::from).into()
    }

    #[test]
    fn counts_copies_by_free_gpus_on_the_named_nodes_only() {
        let mut c = cluster();
        let p = Profile::default_scheduler();
        let two = pod("t", 2, json!({}));
        assert_eq!(c.count_fitting(&p, &two, &all(), 100), Ok(10));
        let only_c: BTreeSet<String> = ["c".to_owned(), "nope".to_owned()].into();
        assert_eq!(c.count_fitting(&p, &two, &only_c, 100), Ok(2));
        assert_eq!(c.count_fitting(&p, &two, &all(), 3), Ok(3));
        assert_eq!(c.count_fitting(&p, &two, &BTreeSet::new(), 100), Ok(0));
    }

    #[test]
    fn anti_affinity_between_copies_allows_one_per_node() {
        let mut c = cluster();
        let p = Profile::default_scheduler();
        let anti = pod(
            "t",
            1,
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "chat"}},
                 "topologyKey": "kubernetes.io/hostname"}]}}}),
        );
        assert_eq!(c.count_fitting(&p, &anti, &all(), 100), Ok(3));
        let zone = pod(
            "z",
            1,
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "chat"}},
                 "topologyKey": "topology.kubernetes.io/zone"}]}}}),
        );
        assert_eq!(c.count_fitting(&p, &zone, &all(), 100), Ok(2));
    }

    #[test]
    fn placed_pods_are_kept_and_counting_leaves_the_cluster_unchanged() {
        let mut c = cluster();
        let p = Profile::default_scheduler();
        let eight = pod("big", 8, json!({}));
        let one = pod("t", 1, json!({}));
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(20));
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(20));
        let first = c.place(&p, &eight).expect("place");
        assert!(matches!(first.as_deref(), Some("a" | "b")));
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(12));
        assert!(c.place(&p, &eight).expect("place").is_some());
        assert_eq!(c.place(&p, &eight), Ok(None));
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(4));
    }

    #[test]
    fn a_rollback_takes_back_what_was_placed_since_the_checkpoint() {
        let mut c = cluster();
        let p = Profile::default_scheduler();
        let one = pod("t", 1, json!({}));
        assert!(
            c.place(&p, &pod("first", 4, json!({})))
                .expect("place")
                .is_some()
        );
        let mark = c.checkpoint();
        assert!(
            c.place(&p, &pod("big", 8, json!({})))
                .expect("place")
                .is_some()
        );
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(8));
        c.rollback_to(mark);
        assert_eq!(c.count_fitting(&p, &one, &all(), 100), Ok(16));
        assert_eq!(c.checkpoint(), mark);
    }

    #[test]
    fn an_empty_or_repeated_node_name_is_an_input_error_naming_it() {
        let with = |names: &[&str]| {
            let c = Cluster {
                nodes: names.iter().map(|n| node(n, 8, "z1")).collect(),
                ..Cluster::default()
            };
            PreparedCluster::new(&c, "default-scheduler")
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert_eq!(with(&["a", "b", "c"]), Ok(()));
        let dup = with(&["c", "b", "a", "b", "c"]).expect_err("duplicate");
        assert!(
            dup.contains("\"b\"") && dup.contains("duplicate node"),
            "{dup}"
        );
        let empty = with(&["c", "c", ""]).expect_err("empty");
        assert!(empty.contains("must be set"), "{empty}");
    }

    #[test]
    fn a_pod_the_model_cannot_hold_is_an_error() {
        let mut c = cluster();
        let p = Profile::default_scheduler();
        let gated = pod("g", 1, json!({"schedulingGates": [{"name": "x"}]}));
        assert!(c.count_fitting(&p, &gated, &all(), 10).is_err());
        assert!(c.place(&p, &gated).is_err());
    }
}
