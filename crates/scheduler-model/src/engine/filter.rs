//! The filter plugins of the default profile (docs/design-simulation.md#default-profile) and
//! the per-cycle precomputation they read, as methods of the prepared cluster.

use std::collections::{BTreeMap, BTreeSet};

use super::{Constraint, Cycle, Filter, NO_RES, NodeFail, PreparedCluster, is_extended};
use crate::config::Profile;
use crate::model::{
    HOSTNAME_LABEL, PodInfo, hard_taints_tolerated, node_affinity_matches, selector_matches,
    tolerates,
};
use crate::objects::{LabelSelector, TopologySpreadConstraint};

impl PreparedCluster {
    /// What the nominated pods of `n` hold against `p`: kube-scheduler adds the pods
    /// nominated to a node with a priority at least `p`'s (not `p` itself) before filtering
    /// `p` there. Only their requests and pod slots are modelled (not their ports, labels or
    /// affinity terms). `None` when nothing is held.
    pub(super) fn held_against(&self, p: &PodInfo, n: usize) -> Option<(i64, Vec<(usize, i64)>)> {
        if self.held.is_empty() {
            return None;
        }
        let mut count = 0;
        let mut req: Vec<(usize, i64)> = Vec::new();
        for h in &self.held {
            if h.node != n || h.priority < p.priority || h.key == p.key() {
                continue;
            }
            count += 1;
            for &(i, v) in &h.req_v {
                if i == NO_RES {
                    continue;
                }
                match req.iter_mut().find(|(j, _)| *j == i) {
                    Some((_, t)) => *t += v,
                    None => req.push((i, v)),
                }
            }
        }
        (count > 0).then_some((count, req))
    }

    /// Free amount of resource index `i` on `n` once `held` is set aside.
    pub(super) fn free_of(
        &self,
        n: usize,
        i: usize,
        held: Option<&(i64, Vec<(usize, i64)>)>,
    ) -> i64 {
        if i == NO_RES {
            return 0;
        }
        let s = &self.state[n];
        let h = held
            .and_then(|(_, r)| r.iter().find(|(j, _)| *j == i))
            .map_or(0, |(_, v)| *v);
        s.alloc[i] - s.requested[i] - h
    }

    fn fits_resources(&self, p: &PodInfo, n: usize, profile: &Profile) -> bool {
        let node = &self.nodes[n];
        let s = &self.state[n];
        let held = self.held_against(p, n);
        let held_count = held.as_ref().map_or(0, |(c, _)| *c);
        if s.count + held_count + 1 > node.max_pods {
            return false;
        }
        if p.requests_nothing() {
            return true;
        }
        p.requests.keys().zip(&p.req_v).all(|(r, &(i, req))| {
            if req == 0 {
                return true;
            }
            let free = self.free_of(n, i, held.as_ref());
            if req <= free {
                return true;
            }
            is_extended(r)
                && (profile.fit.ignored_resources.contains(r)
                    || r.split_once('/')
                        .is_some_and(|(g, _)| profile.fit.ignored_groups.contains(g)))
        })
    }

    /// The member-fits-node test of docs/design-simulation.md#domains-and-room (also used by
    /// standalone packing).
    pub(super) fn member_fits(&self, p: &PodInfo, n: usize) -> bool {
        let node = &self.nodes[n];
        if node.unschedulable || !hard_taints_tolerated(&p.tolerations, node) {
            return false;
        }
        if !node_affinity_matches(p, None, node) {
            return false;
        }
        let s = &self.state[n];
        let held = self.held_against(p, n);
        if s.count + held.as_ref().map_or(0, |(c, _)| *c) + 1 > node.max_pods {
            return false;
        }
        p.req_v
            .iter()
            .all(|&(i, req)| req == 0 || (i != NO_RES && req <= self.free_of(n, i, held.as_ref())))
    }

    pub(super) fn eligible_for_spread(
        &self,
        p: &PodInfo,
        c: &Constraint,
        n: usize,
        profile: &Profile,
    ) -> bool {
        let node = &self.nodes[n];
        if c.honor_affinity && !node_affinity_matches(p, profile.added_required(), node) {
            return false;
        }
        if c.honor_taints && !hard_taints_tolerated(&p.tolerations, node) {
            return false;
        }
        true
    }

    pub(super) fn count_matching(&self, p: &PodInfo, sel: &LabelSelector, n: usize) -> i64 {
        self.state[n]
            .pods
            .iter()
            .filter(|&&q| {
                let q = &self.pods[q];
                q.namespace == p.namespace && !q.terminating && selector_matches(sel, &q.labels)
            })
            .count() as i64
    }

    pub(super) fn constraints_for(&self, p: &PodInfo, profile: &Profile) -> Vec<Constraint> {
        let build = |c: &TopologySpreadConstraint, selector: LabelSelector, explicit: bool| {
            let mut selector = selector;
            for k in &c.match_label_keys {
                if let Some(v) = p.labels.get(k) {
                    selector
                        .match_expressions
                        .push(crate::objects::LabelSelectorRequirement {
                            key: k.clone(),
                            operator: "In".into(),
                            values: vec![v.clone()],
                            unknown: Default::default(),
                        });
                }
            }
            Constraint {
                max_skew: i64::from(c.max_skew),
                key: c.topology_key.clone(),
                hard: c.when_unsatisfiable == "DoNotSchedule",
                selector,
                min_domains: i64::from(c.min_domains.unwrap_or(1)),
                honor_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
                explicit,
            }
        };
        if !p.spread.is_empty() {
            return p
                .spread
                .iter()
                .filter_map(|c| c.label_selector.clone().map(|s| build(c, s, true)))
                .collect();
        }
        // Default constraints: selector from the Services/RCs/RSs/StatefulSets selecting the pod.
        let mut sel = LabelSelector::default();
        let mut any = false;
        for (kind, ns, name, s) in &self.selectors {
            if *ns != p.namespace || !selector_matches(s, &p.labels) {
                continue;
            }
            // Controllers only count when they own the pod; Services always.
            if kind != "Service" && !p.owners.iter().any(|(k, n)| k == kind && n == name) {
                continue;
            }
            any = true;
            for (k, v) in &s.match_labels {
                sel.match_labels.insert(k.clone(), v.clone());
            }
            sel.match_expressions
                .extend(s.match_expressions.iter().cloned());
        }
        if !any {
            return Vec::new();
        }
        let defaults: Vec<TopologySpreadConstraint> = if profile.spread.system_defaulting {
            vec![
                TopologySpreadConstraint {
                    max_skew: 3,
                    topology_key: HOSTNAME_LABEL.into(),
                    when_unsatisfiable: "ScheduleAnyway".into(),
                    ..Default::default()
                },
                TopologySpreadConstraint {
                    max_skew: 5,
                    topology_key: "topology.kubernetes.io/zone".into(),
                    when_unsatisfiable: "ScheduleAnyway".into(),
                    ..Default::default()
                },
            ]
        } else {
            profile.spread.default_constraints.clone()
        };
        defaults
            .iter()
            .map(|c| build(c, sel.clone(), false))
            .collect()
    }

    fn node_value<'a>(&'a self, n: usize, key: &str) -> Option<&'a String> {
        self.nodes[n].labels.get(key)
    }

    pub(super) fn pre_filter(&self, p: &PodInfo, profile: &Profile) -> Cycle {
        let constraints = if profile.has_filter("PodTopologySpread")
            || profile.score_weight("PodTopologySpread").is_some()
        {
            self.constraints_for(p, profile)
        } else {
            Vec::new()
        };
        let mut spread_counts = Vec::new();
        if profile.has_filter("PodTopologySpread") {
            let hard: Vec<&Constraint> = constraints.iter().filter(|c| c.hard).collect();
            for c in &hard {
                let mut counts: BTreeMap<String, i64> = BTreeMap::new();
                for n in 0..self.nodes.len() {
                    if !hard
                        .iter()
                        .all(|h| self.nodes[n].labels.contains_key(&h.key))
                        || !self.eligible_for_spread(p, c, n, profile)
                    {
                        continue;
                    }
                    let v = self.nodes[n].labels[&c.key].clone();
                    *counts.entry(v).or_insert(0) += self.count_matching(p, &c.selector, n);
                }
                let mut min = counts.values().copied().min().unwrap_or(0);
                if (counts.len() as i64) < c.min_domains {
                    min = 0;
                }
                let self_match = selector_matches(&c.selector, &p.labels);
                spread_counts.push((counts, min, self_match));
            }
        }
        let mut forbidden = BTreeSet::new();
        let mut aff_counts = vec![BTreeMap::new(); p.aff_req.len()];
        let mut anti_counts = vec![BTreeSet::new(); p.anti_req.len()];
        let mut aff_any = false;
        if profile.has_filter("InterPodAffinity") {
            for (q, node) in self.placed() {
                let qi = &self.pods[q];
                for t in &qi.anti_req {
                    if t.matches(p)
                        && let Some(v) = self.node_value(node, &t.topology_key)
                    {
                        forbidden.insert((t.topology_key.clone(), v.clone()));
                    }
                }
                if !p.aff_req.is_empty() && p.aff_req.iter().all(|t| t.matches(qi)) {
                    aff_any = true;
                    for (i, t) in p.aff_req.iter().enumerate() {
                        if let Some(v) = self.node_value(node, &t.topology_key) {
                            *aff_counts[i].entry(v.clone()).or_insert(0) += 1;
                        }
                    }
                }
                for (i, t) in p.anti_req.iter().enumerate() {
                    if t.matches(qi)
                        && let Some(v) = self.node_value(node, &t.topology_key)
                    {
                        anti_counts[i].insert(v.clone());
                    }
                }
            }
        }
        Cycle {
            filters: profile
                .filters
                .iter()
                .map(|f| Filter::of(f))
                .filter(|f| !matches!(f, Filter::Other))
                .collect(),
            constraints,
            spread_counts,
            forbidden,
            aff_counts,
            aff_any,
            anti_counts,
            tolerated: vec![std::cell::Cell::new(None); self.taint_classes],
        }
    }

    pub(super) fn placed(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.pod_node
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.map(|n| (i, n)))
    }

    /// Runs the enabled filters in profile order; the first failure decides.
    pub(super) fn filter(
        &self,
        p: &PodInfo,
        n: usize,
        cy: &Cycle,
        profile: &Profile,
    ) -> Result<(), NodeFail> {
        let node = &self.nodes[n];
        for f in &cy.filters {
            let ok = match f {
                Filter::NodeUnschedulable => {
                    !node.unschedulable
                        || p.tolerations.iter().any(|t| {
                            tolerates(
                                t,
                                &crate::objects::Taint {
                                    key: "node.kubernetes.io/unschedulable".into(),
                                    effect: "NoSchedule".into(),
                                    ..Default::default()
                                },
                            )
                        })
                }
                Filter::TaintToleration => {
                    // Equal taints, equal answer: asked once per taint class.
                    let known = &cy.tolerated[self.taint_class[n]];
                    known.get().unwrap_or_else(|| {
                        let ok = hard_taints_tolerated(&p.tolerations, node);
                        known.set(Some(ok));
                        ok
                    })
                }
                Filter::NodeAffinity => node_affinity_matches(p, profile.added_required(), node),
                Filter::NodePorts => {
                    let used = &self.state[n].ports;
                    if p.ports.iter().any(|(proto, ip, port)| {
                        used.iter().any(|(uproto, uip, uport)| {
                            uproto == proto
                                && uport == port
                                && (uip == ip || uip == "0.0.0.0" || ip == "0.0.0.0")
                        })
                    }) {
                        return Err(NodeFail::Unschedulable);
                    }
                    true
                }
                Filter::NodeResourcesFit => {
                    if !self.fits_resources(p, n, profile) {
                        return Err(NodeFail::Unschedulable);
                    }
                    true
                }
                Filter::PodTopologySpread => {
                    let hard: Vec<&Constraint> = cy.constraints.iter().filter(|c| c.hard).collect();
                    for (c, (counts, min, self_match)) in hard.iter().zip(&cy.spread_counts) {
                        let Some(v) = node.labels.get(&c.key) else {
                            return Err(NodeFail::Unresolvable);
                        };
                        let count = counts.get(v).copied().unwrap_or(0);
                        if count + i64::from(*self_match) - min > c.max_skew {
                            return Err(NodeFail::Unschedulable);
                        }
                    }
                    true
                }
                Filter::InterPodAffinity => {
                    for (k, v) in &cy.forbidden {
                        if node.labels.get(k) == Some(v) {
                            return Err(NodeFail::Unschedulable);
                        }
                    }
                    if !p.aff_req.is_empty() {
                        let has_keys = p
                            .aff_req
                            .iter()
                            .all(|t| node.labels.contains_key(&t.topology_key));
                        if !has_keys {
                            return Err(NodeFail::Unresolvable);
                        }
                        if cy.aff_any {
                            let ok = p.aff_req.iter().enumerate().all(|(i, t)| {
                                cy.aff_counts[i]
                                    .get(&node.labels[&t.topology_key])
                                    .is_some_and(|c| *c > 0)
                            });
                            if !ok {
                                return Err(NodeFail::Unresolvable);
                            }
                        } else if !p.aff_req.iter().all(|t| t.matches(p)) {
                            return Err(NodeFail::Unresolvable);
                        }
                    }
                    for (i, t) in p.anti_req.iter().enumerate() {
                        if let Some(v) = node.labels.get(&t.topology_key)
                            && cy.anti_counts[i].contains(v)
                        {
                            return Err(NodeFail::Unschedulable);
                        }
                    }
                    true
                }
                Filter::Other => true,
            };
            if !ok {
                return Err(NodeFail::Unresolvable);
            }
        }
        Ok(())
    }
}
