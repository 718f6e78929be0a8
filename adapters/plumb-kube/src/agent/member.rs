//! The member loop (being built): watches of this member's Deployments, HPAs, Pods, Nodes,
//! Karpenter NodePools, NodeClaims and their Events; the report of every policy each
//! `--interval`; `status.report` and `status.conditions` patched with only what changed.
