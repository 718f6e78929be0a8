//! Hot reload of `config.yaml` in ConfigMap `alfred-config` (docs/design-runtime.md#hot-reload).
//!
//! [`ReloadTracker`] is the pure part: deduplication (an unchanged document, a broken one or a
//! missing key is processed once) and the documented messages. [`ConfigStore`] holds the
//! current (last good) configuration; the watcher task in `mod.rs` feeds the tracker and
//! emits logs, metrics and the `PolicyReloadFailed` Event.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use alfred_model::config::Config;

/// The current configuration, swapped atomically on a good reload.
pub struct ConfigStore {
    current: RwLock<Arc<Config>>,
    generation: AtomicU64,
    loaded: AtomicBool,
}

impl ConfigStore {
    /// Starts with the built-in defaults.
    pub fn new() -> ConfigStore {
        ConfigStore {
            current: RwLock::new(Arc::new(Config::builtin())),
            generation: AtomicU64::new(0),
            loaded: AtomicBool::new(false),
        }
    }

    /// The configuration now, and its generation (bumped on every swap).
    pub fn current(&self) -> (Arc<Config>, u64) {
        let c = self
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        (c, self.generation.load(Ordering::SeqCst))
    }

    /// The generation now.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Installs a new configuration.
    pub fn swap(&self, config: Config) {
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks the first look at the ConfigMap done (loaded, failed or missing).
    pub fn mark_initialised(&self) {
        self.loaded.store(true, Ordering::SeqCst);
    }

    /// Whether the ConfigMap has been looked at once.
    pub fn initialised(&self) -> bool {
        self.loaded.load(Ordering::SeqCst)
    }
}

impl Default for ConfigStore {
    fn default() -> Self {
        Self::new()
    }
}

/// What one ConfigMap observation means.
#[derive(Debug, Clone, PartialEq)]
pub enum Reload {
    /// Same document (or same failure) as last time: nothing to do.
    Unchanged,
    /// A valid new configuration.
    Loaded(Box<Config>),
    /// Rejected; the message is the Event's.
    Failed(String),
}

/// Deduplicates ConfigMap observations.
#[derive(Debug, Default)]
pub struct ReloadTracker {
    /// The last `config.yaml` processed (`Some(None)`: the key was missing).
    last: Option<Option<String>>,
}

/// Parses a config document as the lead's `config check` does: JSON when it starts with `{`,
/// YAML otherwise.
pub fn parse(text: &str) -> Result<Config, String> {
    let parsed = if text.trim_start().starts_with('{') {
        Config::from_json(text)
    } else {
        Config::from_yaml(text)
    };
    parsed.map_err(|e| e.to_string())
}

impl ReloadTracker {
    /// Processes the value of `key` in ConfigMap `namespace/name` (`None`: key missing).
    pub fn observe(
        &mut self,
        namespace: &str,
        name: &str,
        key: &str,
        text: Option<&str>,
    ) -> Reload {
        let now = text.map(str::to_owned);
        if self.last.as_ref() == Some(&now) {
            return Reload::Unchanged;
        }
        self.last = Some(now);
        match text {
            None => Reload::Failed(format!("ConfigMap {namespace}/{name} has no {key:?} key")),
            Some(t) => match parse(t) {
                Ok(c) => Reload::Loaded(Box::new(c)),
                Err(e) => Reload::Failed(format!("{name} rejected, keeping last-known-good: {e}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_and_messages() {
        let mut t = ReloadTracker::default();
        let ok = "schemaVersion: 1\nmode: recommend-only\n";
        assert!(matches!(
            t.observe("ome", "alfred-config", "config.yaml", Some(ok)),
            Reload::Loaded(_)
        ));
        assert_eq!(
            t.observe("ome", "alfred-config", "config.yaml", Some(ok)),
            Reload::Unchanged
        );
        let bad = "schemaVersion: 1\nmode: sideways\n";
        let Reload::Failed(msg) = t.observe("ome", "alfred-config", "config.yaml", Some(bad))
        else {
            panic!("expected a failure");
        };
        assert!(
            msg.starts_with("alfred-config rejected, keeping last-known-good: "),
            "{msg}"
        );
        assert_eq!(
            t.observe("ome", "alfred-config", "config.yaml", Some(bad)),
            Reload::Unchanged
        );
        assert_eq!(
            t.observe("ome", "alfred-config", "config.yaml", None),
            Reload::Failed("ConfigMap ome/alfred-config has no \"config.yaml\" key".into())
        );
        assert_eq!(
            t.observe("ome", "alfred-config", "config.yaml", None),
            Reload::Unchanged
        );
        assert!(matches!(
            t.observe("ome", "alfred-config", "config.yaml", Some(ok)),
            Reload::Loaded(_)
        ));
    }

    #[test]
    fn the_store_swaps_and_counts_generations() {
        let s = ConfigStore::new();
        let (c, g) = s.current();
        assert_eq!(*c, Config::builtin());
        s.swap(parse("schemaVersion: 1\ndecisionLoopInterval: 1m\n").unwrap());
        assert_eq!(s.generation(), g + 1);
        assert_eq!(s.current().0.decision_loop_interval.as_secs(), 60);
    }
}
