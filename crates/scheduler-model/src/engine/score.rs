//! The score plugins of the default profile (docs/design-simulation.md#default-profile) and
//! their normalization, as methods of the prepared cluster.

use std::collections::{BTreeMap, BTreeSet};

use super::{Constraint, Cycle, MAX_NODE_SCORE, NO_RES, NodeState, PreparedCluster, is_extended};
use crate::config::{FitStrategy, Profile};
use crate::model::{HOSTNAME_LABEL, PodInfo, node_term_matches, tolerates};

impl PreparedCluster {
    pub(super) fn score(
        &self,
        p: &PodInfo,
        feasible: &[usize],
        cy: &Cycle,
        profile: &Profile,
        gang_packing: Option<&(String, Vec<i64>)>,
    ) -> Vec<i64> {
        let mut total = vec![0i64; feasible.len()];
        for (plugin, weight) in &profile.scores {
            let scores: Option<Vec<i64>> = match plugin.as_str() {
                "TaintToleration" => Some(self.score_taints(p, feasible)),
                "NodeAffinity" => self.score_node_affinity(p, feasible, profile),
                "NodeResourcesFit" => Some(self.score_fit(p, feasible, profile)),
                "NodeResourcesBalancedAllocation" => self.score_balanced(p, feasible, profile),
                "ImageLocality" => Some(self.score_images(p, feasible)),
                "PodTopologySpread" => self.score_spread(p, feasible, cy, profile),
                "InterPodAffinity" => self.score_ipa(p, feasible, profile),
                "OMEGangPack" => gang_packing.map(|(_, s)| s.clone()),
                _ => None,
            };
            if let Some(s) = scores {
                for (t, s) in total.iter_mut().zip(s) {
                    *t += weight * s;
                }
            }
        }
        total
    }

    /// The part of node `n`'s total score that depends on what the node holds: the weighted
    /// resource scores (`NodeResourcesFit`, `NodeResourcesBalancedAllocation`), which are
    /// not normalized over the feasible nodes. The rest of a total changes only with the
    /// feasible set, or with pods that have pod terms or spread.
    pub(super) fn occupancy_score(&self, p: &PodInfo, n: usize, profile: &Profile) -> i64 {
        let mut total = 0;
        for (plugin, weight) in &profile.scores {
            let score = match plugin.as_str() {
                "NodeResourcesFit" => self.score_fit(p, &[n], profile).first().copied(),
                "NodeResourcesBalancedAllocation" => self
                    .score_balanced(p, &[n], profile)
                    .and_then(|s| s.first().copied()),
                _ => None,
            };
            total += weight * score.unwrap_or(0);
        }
        total
    }

    fn score_taints(&self, p: &PodInfo, feasible: &[usize]) -> Vec<i64> {
        let tols: Vec<&crate::objects::Toleration> = p
            .tolerations
            .iter()
            .filter(|t| t.effect.is_empty() || t.effect == "PreferNoSchedule")
            .collect();
        // Equal taints, equal count: counted once per taint class.
        let mut known: Vec<Option<i64>> = vec![None; self.taint_classes];
        let raw: Vec<i64> = feasible
            .iter()
            .map(|&n| {
                *known[self.taint_class[n]].get_or_insert_with(|| {
                    self.nodes[n]
                        .taints
                        .iter()
                        .filter(|t| t.effect == "PreferNoSchedule")
                        .filter(|taint| !tols.iter().any(|t| tolerates(t, taint)))
                        .count() as i64
                })
            })
            .collect();
        default_normalize(raw, true)
    }

    fn score_node_affinity(
        &self,
        p: &PodInfo,
        feasible: &[usize],
        profile: &Profile,
    ) -> Option<Vec<i64>> {
        let added: &[crate::objects::PreferredSchedulingTerm] = profile
            .added_affinity
            .as_ref()
            .map(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_slice()
            })
            .unwrap_or(&[]);
        if p.preferred_node.is_empty() && added.is_empty() {
            return None;
        }
        let raw = feasible
            .iter()
            .map(|&n| {
                p.preferred_node
                    .iter()
                    .chain(added)
                    .filter(|t| t.weight != 0 && node_term_matches(&t.preference, &self.nodes[n]))
                    .map(|t| i64::from(t.weight))
                    .sum()
            })
            .collect();
        Some(default_normalize(raw, false))
    }

    fn pod_request_for_score(p: &PodInfo, r: &str, non_zero: bool) -> i64 {
        match r {
            "cpu" if non_zero => p.nz_cpu,
            "memory" if non_zero => p.nz_mem,
            _ => p.requests.get(r).copied().unwrap_or(0),
        }
    }

    fn score_fit(&self, p: &PodInfo, feasible: &[usize], profile: &Profile) -> Vec<i64> {
        // Per scored resource, what does not depend on the node: its weight, the pod's
        // request, its index, and which of the node's totals it reads.
        let resources: Vec<(i64, i64, &str, Option<usize>)> = profile
            .fit
            .resources
            .iter()
            .map(|(r, w)| {
                let pr = Self::pod_request_for_score(p, r, true);
                (*w, pr, r.as_str(), self.scored_index(r, pr))
            })
            .collect();
        feasible
            .iter()
            .map(|&n| {
                let s = &self.state[n];
                let (mut sum, mut wsum) = (0i64, 0i64);
                for &(w, pr, r, i) in &resources {
                    let Some((i, alloc)) = Self::scored_alloc(s, i) else {
                        continue;
                    };
                    let used = match r {
                        "cpu" => s.nz_cpu,
                        "memory" => s.nz_mem,
                        _ => s.requested[i],
                    } + pr;
                    let sr = match profile.fit.strategy {
                        FitStrategy::LeastAllocated => {
                            if used > alloc {
                                0
                            } else {
                                (alloc - used) * MAX_NODE_SCORE / alloc
                            }
                        }
                        FitStrategy::MostAllocated => used.min(alloc) * MAX_NODE_SCORE / alloc,
                    };
                    sum += sr * w;
                    wsum += w;
                }
                if wsum == 0 { 0 } else { sum / wsum }
            })
            .collect()
    }

    /// Resource `r`'s index when it counts in a resource score for a request of `pr`: not a
    /// scalar resource the pod does not ask for (`None`), else its index (`NO_RES` when no
    /// node offers it).
    fn scored_index(&self, r: &str, pr: i64) -> Option<usize> {
        if is_scalar(r) && pr == 0 {
            return None;
        }
        Some(self.res(r))
    }

    /// The index [`Self::scored_index`] gave and node `s`'s allocatable of that resource,
    /// when it counts: some of it allocatable.
    fn scored_alloc(s: &NodeState, i: Option<usize>) -> Option<(usize, i64)> {
        let i = i?;
        let alloc = if i == NO_RES { 0 } else { s.alloc[i] };
        (alloc != 0).then_some((i, alloc))
    }

    fn score_balanced(
        &self,
        p: &PodInfo,
        feasible: &[usize],
        profile: &Profile,
    ) -> Option<Vec<i64>> {
        if profile
            .balanced_resources
            .iter()
            .all(|(r, _)| Self::pod_request_for_score(p, r, false) == 0)
        {
            return None;
        }
        let resources: Vec<(i64, Option<usize>)> = profile
            .balanced_resources
            .iter()
            .map(|(r, _)| {
                let pr = Self::pod_request_for_score(p, r, false);
                (pr, self.scored_index(r, pr))
            })
            .collect();
        let mut fractions = Vec::with_capacity(resources.len());
        Some(
            feasible
                .iter()
                .map(|&n| {
                    let s = &self.state[n];
                    fractions.clear();
                    for &(pr, i) in &resources {
                        let Some((i, alloc)) = Self::scored_alloc(s, i) else {
                            continue;
                        };
                        let used = s.requested[i] + pr;
                        fractions.push((used as f64 / alloc as f64).min(1.0));
                    }
                    let std = match fractions.len() {
                        0 | 1 => 0.0,
                        2 => (fractions[0] - fractions[1]).abs() / 2.0,
                        len => {
                            let mean = fractions.iter().sum::<f64>() / len as f64;
                            let var = fractions
                                .iter()
                                .map(|f| (f - mean) * (f - mean))
                                .sum::<f64>()
                                / len as f64;
                            var.sqrt()
                        }
                    };
                    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
                })
                .collect(),
        )
    }

    fn score_images(&self, p: &PodInfo, feasible: &[usize]) -> Vec<i64> {
        const MB: i64 = 1024 * 1024;
        let total = self.nodes.len() as i64;
        let spread: Vec<i64> = p
            .images
            .iter()
            .map(|img| {
                self.nodes
                    .iter()
                    .filter(|n| n.images.contains_key(img))
                    .count() as i64
            })
            .collect();
        let containers = p.images.len().max(1) as i64;
        let (min, max) = (23 * MB, 1000 * MB * containers);
        feasible
            .iter()
            .map(|&n| {
                let mut sum = 0i64;
                for (img, cnt) in p.images.iter().zip(&spread) {
                    if let Some(size) = self.nodes[n].images.get(img) {
                        sum += (*size as f64 * (*cnt as f64 / total.max(1) as f64)) as i64;
                    }
                }
                let sum = sum.clamp(min, max);
                MAX_NODE_SCORE * (sum - min) / (max - min)
            })
            .collect()
    }

    fn score_spread(
        &self,
        p: &PodInfo,
        feasible: &[usize],
        cy: &Cycle,
        profile: &Profile,
    ) -> Option<Vec<i64>> {
        let soft: Vec<&Constraint> = cy.constraints.iter().filter(|c| !c.hard).collect();
        if soft.is_empty() {
            return None;
        }
        let ignored: Vec<bool> = feasible
            .iter()
            .map(|&n| {
                soft.iter()
                    .any(|c| c.explicit && !self.nodes[n].labels.contains_key(&c.key))
            })
            .collect();
        // Domain counts over all eligible nodes carrying every key.
        let mut weights = Vec::new();
        let mut counts: Vec<BTreeMap<String, i64>> = Vec::new();
        for c in &soft {
            let domains: BTreeSet<&String> = feasible
                .iter()
                .zip(&ignored)
                .filter(|(_, ig)| !**ig)
                .filter_map(|(&n, _)| self.nodes[n].labels.get(&c.key))
                .collect();
            let ndom = if c.key == HOSTNAME_LABEL {
                ignored.iter().filter(|i| !**i).count()
            } else {
                domains.len()
            };
            weights.push(((ndom + 2) as f64).ln());
            let mut m = BTreeMap::new();
            if c.key != HOSTNAME_LABEL {
                for n in 0..self.nodes.len() {
                    if !soft
                        .iter()
                        .all(|h| self.nodes[n].labels.contains_key(&h.key))
                        || !self.eligible_for_spread(p, c, n, profile)
                    {
                        continue;
                    }
                    let v = self.nodes[n].labels[&c.key].clone();
                    *m.entry(v).or_insert(0) += self.count_matching(p, &c.selector, n);
                }
            }
            counts.push(m);
        }
        let raw: Vec<i64> = feasible
            .iter()
            .zip(&ignored)
            .map(|(&n, ig)| {
                if *ig {
                    return 0;
                }
                let mut s = 0.0f64;
                for (i, c) in soft.iter().enumerate() {
                    let Some(v) = self.nodes[n].labels.get(&c.key) else {
                        continue;
                    };
                    let cnt = if c.key == HOSTNAME_LABEL {
                        self.count_matching(p, &c.selector, n)
                    } else {
                        counts[i].get(v).copied().unwrap_or(0)
                    };
                    s += cnt as f64 * weights[i] + (c.max_skew - 1) as f64;
                }
                s.round() as i64
            })
            .collect();
        let live: Vec<i64> = raw
            .iter()
            .zip(&ignored)
            .filter(|(_, ig)| !**ig)
            .map(|(s, _)| *s)
            .collect();
        let (Some(&min), Some(&max)) = (live.iter().min(), live.iter().max()) else {
            return Some(vec![0; feasible.len()]);
        };
        Some(
            raw.iter()
                .zip(&ignored)
                .map(|(s, ig)| {
                    if *ig {
                        0
                    } else if max == 0 {
                        MAX_NODE_SCORE
                    } else {
                        MAX_NODE_SCORE * (max + min - s) / max
                    }
                })
                .collect(),
        )
    }

    fn score_ipa(&self, p: &PodInfo, feasible: &[usize], profile: &Profile) -> Option<Vec<i64>> {
        let existing_terms = self
            .placed()
            .any(|(q, _)| self.pods[q].has_affinity_terms());
        if p.aff_pref.is_empty() && p.anti_pref.is_empty() && !existing_terms {
            return None;
        }
        let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
        let add = |key: &str, n: usize, w: i64, pairs: &mut BTreeMap<(String, String), i64>| {
            if let Some(v) = self.nodes[n].labels.get(key) {
                *pairs.entry((key.to_string(), v.clone())).or_insert(0) += w;
            }
        };
        for (q, n) in self.placed() {
            let qi = &self.pods[q];
            for t in &p.aff_pref {
                if t.matches(qi) {
                    add(&t.topology_key, n, t.weight, &mut pairs);
                }
            }
            for t in &p.anti_pref {
                if t.matches(qi) {
                    add(&t.topology_key, n, -t.weight, &mut pairs);
                }
            }
            if !qi.has_affinity_terms() {
                continue;
            }
            for t in &qi.aff_req {
                if t.matches(p) {
                    add(
                        &t.topology_key,
                        n,
                        profile.hard_pod_affinity_weight,
                        &mut pairs,
                    );
                }
            }
            if !profile.ignore_preferred_terms_of_existing_pods {
                for t in &qi.aff_pref {
                    if t.matches(p) {
                        add(&t.topology_key, n, t.weight, &mut pairs);
                    }
                }
                for t in &qi.anti_pref {
                    if t.matches(p) {
                        add(&t.topology_key, n, -t.weight, &mut pairs);
                    }
                }
            }
        }
        let raw: Vec<i64> = feasible
            .iter()
            .map(|&n| {
                pairs
                    .iter()
                    .filter(|((k, v), _)| self.nodes[n].labels.get(k) == Some(v))
                    .map(|(_, w)| *w)
                    .sum()
            })
            .collect();
        let (min, max) = (
            raw.iter().copied().min().unwrap_or(0),
            raw.iter().copied().max().unwrap_or(0),
        );
        Some(
            raw.iter()
                .map(|s| {
                    if max == min {
                        0
                    } else {
                        (MAX_NODE_SCORE as f64 * ((s - min) as f64 / (max - min) as f64)) as i64
                    }
                })
                .collect(),
        )
    }

    /// OMEGangPack's standalone domain-packing score
    /// (docs/design-simulation.md#standalone-pods-under-the-ome-scheduler).
    pub(super) fn packing_score(
        &self,
        p: &PodInfo,
        feasible: &[usize],
        profile: &Profile,
    ) -> Option<(String, Vec<i64>)> {
        let g = profile.gang.as_ref()?;
        if !g.standalone_domain_packing || g.topology_key.is_empty() || p.pod_group.is_some() {
            return None;
        }
        let key = &g.topology_key;
        let mut per_domain: BTreeMap<&String, i64> = BTreeMap::new();
        for &n in feasible {
            if let Some(v) = self.nodes[n].labels.get(key)
                && self.member_fits(p, n)
            {
                *per_domain.entry(v).or_insert(0) += 1;
            }
        }
        let largest = per_domain.values().copied().max().unwrap_or(0);
        let raw: Vec<i64> = feasible
            .iter()
            .map(|&n| match self.nodes[n].labels.get(key) {
                Some(v) => largest - per_domain.get(v).copied().unwrap_or(0),
                None => 0,
            })
            .collect();
        let max = raw.iter().copied().max().unwrap_or(0);
        Some((
            key.clone(),
            raw.iter()
                .map(|r| {
                    if max == 0 {
                        0
                    } else {
                        r * MAX_NODE_SCORE / max
                    }
                })
                .collect(),
        ))
    }
}

/// `DefaultNormalize` (docs/design-simulation.md#default-profile).
fn default_normalize(mut scores: Vec<i64>, reverse: bool) -> Vec<i64> {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return scores;
    }
    for s in &mut scores {
        *s = MAX_NODE_SCORE * *s / max;
        if reverse {
            *s = MAX_NODE_SCORE - *s;
        }
    }
    scores
}

/// Scalar resources: extended, hugepages, attachable volumes.
fn is_scalar(r: &str) -> bool {
    is_extended(r) || r.starts_with("hugepages-") || r.starts_with("attachable-volumes-")
}
