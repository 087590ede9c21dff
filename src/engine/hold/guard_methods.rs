//! The hold methods every guard has, written once: each guard type calls one of these
//! macros in its `impl`, and each method delegates to the guard's `watch` field, a
//! [`HoldWatch`](super::watch::HoldWatch). The async guards (`LockGuard`, `GroupGuard`,
//! `Permit`) get `watch`, `state`, `is_lost`, `state_changes`, `at_risk`, `held_again`,
//! `lost`; the blocking guards get the same with `wait_at_risk`, `wait_held_again`,
//! `wait_lost` in place of the async waits.

/// `state` and `is_lost`, the same on async and blocking guards; both macros below call it.
macro_rules! hold_state_methods {
    ($it:literal, $take:literal) => {
        /// The hold's state now, exact at the moment of the call
        /// ([`HoldWatch::state`](crate::HoldWatch::state)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("assert_eq!(", $it, ".state(), redisson_lock::HoldState::Held);")]
        #[doc = "# Ok(()) }\n```"]
        pub fn state(&self) -> crate::engine::hold::state::HoldState {
            self.watch.state()
        }

        /// Whether the hold is known to be lost: found gone, its lease ran out, or the
        /// client was shut down ([`HoldWatch::is_lost`](crate::HoldWatch::is_lost)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("assert!(!", $it, ".is_lost());")]
        #[doc = "# Ok(()) }\n```"]
        pub fn is_lost(&self) -> bool {
            self.watch.is_lost()
        }
    };
}
pub(crate) use hold_state_methods;

/// The hold methods of an async guard, each delegating to the guard's `watch` field (a
/// [`HoldWatch`](super::watch::HoldWatch)): `watch`, `state`, `is_lost`, `state_changes`, `at_risk`, `held_again`,
/// `lost`, the same on every guard. `$it` names the guard in the examples, `$take` is the
/// examples' hidden signature and the line that takes the guard.
macro_rules! async_hold_methods {
    ($it:literal, $take:literal) => {
        /// The hold(s) this guard has, as one [`HoldWatch`](crate::HoldWatch); the
        /// guard's other hold methods are its. Clone it for a task that must stop when
        /// the hold is at risk.
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("let watch = ", $it, ".watch().clone();")]
        #[doc = "tokio::spawn(async move { watch.at_risk().await; /* stop the work */ });"]
        #[doc = "# Ok(()) }\n```"]
        pub fn watch(&self) -> &crate::engine::hold::watch::HoldWatch {
            &self.watch
        }

        crate::engine::hold::guard_methods::hold_state_methods!($it, $take);

        /// A receiver of the hold's state changes, a `tokio::sync::watch`
        /// ([`HoldWatch::state_changes`](crate::HoldWatch::state_changes)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("let mut changes = ", $it, ".state_changes();")]
        #[doc = "tokio::spawn(async move {"]
        #[doc = "    while changes.changed().await.is_ok() {"]
        #[doc = "        eprintln!(\"now {}\", *changes.borrow_and_update());"]
        #[doc = "    }"]
        #[doc = "});"]
        #[doc = "# Ok(()) }\n```"]
        pub fn state_changes(
            &self,
        ) -> tokio::sync::watch::Receiver<crate::engine::hold::state::HoldState> {
            self.watch.state_changes()
        }

        /// Completes as soon as the hold is no longer surely held (at risk, or lost), with
        /// that state; always before it can have expired in Redis; for a risk that begins
        /// after the call however short it is, with `AtRisk` even if the hold is `Held`
        /// again by then. Cancel safe ([`HoldWatch::at_risk`](crate::HoldWatch::at_risk)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = "tokio::select! {"]
        #[doc = concat!("    state = ", $it, ".at_risk() => eprintln!(\"stopping: {state}\"),")]
        #[doc = "    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}"]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub fn at_risk(
            &self,
        ) -> impl std::future::Future<Output = crate::engine::hold::state::HoldState> + Send + '_ {
            self.watch.at_risk()
        }

        /// Completes when the hold is confirmed held again after being at risk; at once if
        /// it is held; never once lost. Cancel safe
        /// ([`HoldWatch::held_again`](crate::HoldWatch::held_again)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("", $it, ".at_risk().await;")]
        #[doc = "tokio::select! {"]
        #[doc = concat!("    _ = ", $it, ".held_again() => eprintln!(\"still ours\"),")]
        #[doc = concat!("    _ = ", $it, ".lost() => eprintln!(\"gone\"),")]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub async fn held_again(&self) {
            self.watch.held_again().await
        }

        /// Completes when the hold is lost; never while it is held. Cancel safe
        /// ([`HoldWatch::lost`](crate::HoldWatch::lost)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = "tokio::select! {"]
        #[doc = concat!("    _ = ", $it, ".lost() => eprintln!(\"lost\"),")]
        #[doc = "    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}"]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub async fn lost(&self) {
            self.watch.lost().await
        }
    };
}
pub(crate) use async_hold_methods;

/// The hold methods of a blocking guard, each delegating to the guard's `watch` field (a
/// [`HoldWatch`](super::watch::HoldWatch)): `watch`, `state`, `is_lost`, `state_changes`, `wait_at_risk`,
/// `wait_held_again`, `wait_lost`, the same on every blocking guard. Arguments as
/// [`async_hold_methods!`].
#[cfg(feature = "blocking")]
macro_rules! blocking_hold_methods {
    ($it:literal, $take:literal) => {
        /// The hold(s) this guard has, as one [`HoldWatch`](crate::HoldWatch); the
        /// guard's other hold methods are its. Clone it for a thread that must stop when
        /// the hold is at risk.
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("let watch = ", $it, ".watch().clone();")]
        #[doc = "std::thread::spawn(move || watch.wait_lost(std::time::Duration::from_secs(60)));"]
        #[doc = "# Ok(()) }\n```"]
        pub fn watch(&self) -> &crate::engine::hold::watch::HoldWatch {
            &self.watch
        }

        crate::engine::hold::guard_methods::hold_state_methods!($it, $take);

        /// A receiver of the hold's state changes, a `tokio::sync::watch`; from blocking
        /// code, poll it with `has_changed()` and `borrow()`
        /// ([`HoldWatch::state_changes`](crate::HoldWatch::state_changes)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("let changes = ", $it, ".state_changes();")]
        #[doc = "if changes.has_changed().unwrap_or(true) {"]
        #[doc = "    eprintln!(\"now {}\", *changes.borrow());"]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub fn state_changes(
            &self,
        ) -> tokio::sync::watch::Receiver<crate::engine::hold::state::HoldState> {
            self.watch.state_changes()
        }

        /// Blocks until the hold is no longer surely held (returns that state) or
        /// `timeout` passes (`None`: still held); works on any thread, inside a tokio
        /// runtime too ([`HoldWatch::wait_at_risk`](crate::HoldWatch::wait_at_risk)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = "# const TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);"]
        #[doc = concat!("if let Some(state) = ", $it, ".wait_at_risk(TIMEOUT) {")]
        #[doc = "    eprintln!(\"stop: {state}\");"]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub fn wait_at_risk(
            &self,
            timeout: std::time::Duration,
        ) -> Option<crate::engine::hold::state::HoldState> {
            self.watch.wait_at_risk(timeout)
        }

        /// Blocks until the hold is held (`true`; at once if it is), or is lost or
        /// `timeout` passes (`false`)
        /// ([`HoldWatch::wait_held_again`](crate::HoldWatch::wait_held_again)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("if !", $it, ".wait_held_again(std::time::Duration::from_secs(5)) {")]
        #[doc = concat!("    eprintln!(\"not confirmed: {}\", ", $it, ".state());")]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub fn wait_held_again(&self, timeout: std::time::Duration) -> bool {
            self.watch.wait_held_again(timeout)
        }

        /// Blocks until the hold is lost (`true`) or `timeout` passes (`false`)
        /// ([`HoldWatch::wait_lost`](crate::HoldWatch::wait_lost)).
        ///
        /// # Examples
        #[doc = "```no_run"]
        #[doc = $take]
        #[doc = concat!("if ", $it, ".wait_lost(std::time::Duration::from_millis(100)) {")]
        #[doc = "    eprintln!(\"lost\");"]
        #[doc = "}"]
        #[doc = "# Ok(()) }\n```"]
        pub fn wait_lost(&self, timeout: std::time::Duration) -> bool {
            self.watch.wait_lost(timeout)
        }
    };
}
#[cfg(feature = "blocking")]
pub(crate) use blocking_hold_methods;
