//! The fleet's members (docs/plumb/agent.md#membership): this agent's own cluster plus one
//! member per ClusterProfile (`multicluster.x-k8s.io/v1alpha1`, read as dynamic objects) in
//! Plumb's namespace, each with one `kube::Client` built from its access provider
//! ([`credentials`]). A client is rebuilt when what it was built from
//! changes (the chosen provider, the profile's `cluster`, the plugin) and dropped when the
//! profile is deleted.
//!
//! Every member is a voter (D.4): one without usable credentials, or whose plugin fails,
//! still counts in the majority, as a voter that cannot be reached. Its reason is logged as
//! one line naming the profile and the field, once per change.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::Value;

use super::MemberClients;
use super::credentials::{self, MemberAccess, ProviderFile};

/// ClusterProfile's API group.
pub const GROUP: &str = "multicluster.x-k8s.io";
/// ClusterProfile's version.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "ClusterProfile";
/// Its plural.
pub const PLURAL: &str = "clusterprofiles";

/// The voters and the members reached, at one instant.
#[derive(Clone, Default)]
pub struct Fleet {
    /// Every voter's name, this agent's cluster included, sorted.
    pub voters: Vec<String>,
    /// A client per member that has one (this agent's own cluster always).
    pub clients: MemberClients,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("voters", &self.voters)
            .field("clients", &self.clients.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// One ClusterProfile's member: what its client was built from, and the client or why
/// there is none.
struct Member {
    access: Result<MemberAccess, String>,
    client: Result<Client, String>,
    /// When a client that failed to build (its plugin failed) is tried again.
    retry_at: Option<tokio::time::Instant>,
}

/// How long after a failed build (a plugin that failed, say for want of a token yet) the
/// client of an unchanged profile is built again.
pub const CLIENT_RETRY: Duration = Duration::from_secs(30);

/// The members as the ClusterProfiles say, with their clients.
pub struct Membership {
    own: String,
    own_client: Client,
    namespace: String,
    providers: Option<ProviderFile>,
    timeout: Duration,
    members: BTreeMap<String, Member>,
    profiles: Option<ProfileWatch>,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("own", &self.own)
            .field("members", &self.members.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The watch of the ClusterProfiles: a reflector store, filled by a task stopped on drop.
struct ProfileWatch {
    store: Store<DynamicObject>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ProfileWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// ClusterProfile's API resource.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

impl Membership {
    /// The membership of the agent of cluster `own`. Without a provider file the fleet is
    /// this member alone and no ClusterProfile is read (docs/plumb/agent.md#membership); with one, the
    /// ClusterProfiles of `namespace` are watched from now on. `timeout` bounds connecting
    /// to a member.
    pub fn new(
        own: &str,
        own_client: Client,
        namespace: &str,
        providers: Option<ProviderFile>,
        timeout: Duration,
    ) -> Membership {
        let profiles = providers
            .as_ref()
            .map(|_| watch_profiles(own_client.clone(), namespace));
        Membership {
            own: own.to_owned(),
            own_client,
            namespace: namespace.to_owned(),
            providers,
            timeout,
            members: BTreeMap::new(),
            profiles,
        }
    }

    /// Brings the members up to the ClusterProfiles' current list and returns the fleet;
    /// `None` while that list has not been read once (no election may run on a guess).
    pub async fn refresh(&mut self) -> Option<Fleet> {
        let profiles = match &self.profiles {
            None => Vec::new(),
            Some(w) => {
                w.store.wait_until_ready().now_or_never()?.ok()?;
                w.store
                    .state()
                    .iter()
                    .map(|o| serde_json::to_value(o.as_ref()).unwrap_or(Value::Null))
                    .collect()
            }
        };
        self.update(profiles).await;
        Some(self.fleet())
    }

    /// Reconciles the members with `profiles` (ClusterProfiles as JSON).
    pub async fn update(&mut self, profiles: Vec<Value>) {
        let empty = ProviderFile::default();
        let providers = self.providers.as_ref().unwrap_or(&empty);
        let mut seen = BTreeMap::new();
        for profile in profiles {
            let Some(name) = profile["metadata"]["name"].as_str().map(str::to_owned) else {
                continue;
            };
            if name == self.own {
                // This agent is a voter anyway; a profile of itself adds no second vote.
                continue;
            }
            seen.insert(name, credentials::resolve(&profile, providers));
        }
        self.members.retain(|name, _| {
            let keep = seen.contains_key(name);
            if !keep {
                tracing::info!(member = %name, "ClusterProfile deleted: member removed from the fleet");
            }
            keep
        });
        for (name, access) in seen {
            let before = self.members.get(&name);
            let retry = before.is_some_and(|m| {
                m.access == access && m.retry_at.is_some_and(|t| tokio::time::Instant::now() >= t)
            });
            if before.is_some_and(|m| m.access == access) && !retry {
                continue;
            }
            let client = match &access {
                Ok(a) => self.build_client(&name, a).await,
                Err(e) => Err(e.clone()),
            };
            let said_before = before.and_then(|m| m.client.as_ref().err());
            match &client {
                Ok(_) => {
                    tracing::info!(member = %name, provider = %access.as_ref().map(|a| a.provider.as_str()).unwrap_or("-"), "member client ready")
                }
                Err(e) if said_before == Some(e) => {}
                Err(e) => {
                    tracing::warn!(member = %name, "{e}; it counts as a voter that cannot be reached")
                }
            }
            // Only a plugin's failure is worth trying again; a profile without usable
            // credentials waits for the profile to change.
            let retry_at = (client.is_err() && access.is_ok())
                .then(|| tokio::time::Instant::now() + CLIENT_RETRY);
            self.members.insert(
                name,
                Member {
                    access,
                    client,
                    retry_at,
                },
            );
        }
    }

    async fn build_client(&self, name: &str, access: &MemberAccess) -> Result<Client, String> {
        let config =
            credentials::client_config(name, access, &self.namespace, self.timeout).await?;
        // kube-rs runs the exec plugin here for the first token.
        Client::try_from(config).map_err(|e| {
            format!(
                "ClusterProfile {name}: access provider {} failed: {}",
                access.provider,
                error_line::one_line(&e.to_string())
            )
        })
    }

    /// The voters and the clients now.
    pub fn fleet(&self) -> Fleet {
        let mut voters: Vec<String> = self.members.keys().cloned().collect();
        voters.push(self.own.clone());
        voters.sort();
        let mut clients: MemberClients = self
            .members
            .iter()
            .filter_map(|(n, m)| m.client.as_ref().ok().map(|c| (n.clone(), c.clone())))
            .collect();
        clients.insert(self.own.clone(), self.own_client.clone());
        Fleet { voters, clients }
    }
}

/// Starts watching the ClusterProfiles of `namespace` into a store.
fn watch_profiles(client: Client, namespace: &str) -> ProfileWatch {
    let ar = resource();
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &ar);
    let writer = reflector::store::Writer::new(ar);
    let store = writer.as_reader();
    let namespace = namespace.to_owned();
    let task = tokio::spawn(async move {
        let mut last_error = None;
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(_) => last_error = None,
                Err(e) => {
                    let e = e.to_string();
                    if last_error.as_ref() != Some(&e) {
                        tracing::warn!(%namespace, error = %e, "ClusterProfile watch failed; retrying (no election until the list is read)");
                    }
                    last_error = Some(e);
                }
            }
        }
    });
    ProfileWatch { store, task }
}

#[cfg(test)]
mod tests;
