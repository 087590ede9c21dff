//! The members of a group: any [`Lock<K>`] behind one object-safe trait, [`AnyLock`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fred::prelude::KeysInterface;

use crate::engine::Engine;
use crate::error::Result;
use crate::lock::acquiring::{Acquired, Wait};
use crate::lock::handle::Lock;
use crate::lock::kind::LockKind;
use crate::lock::releasing::UnlockReply;
use crate::names::owner::LockOwner;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a group needs from one member, whatever its kind: the engine's operations with an
/// explicit owner. Implemented once, for every [`Lock<K>`].
pub(super) trait Member: Send + Sync + fmt::Debug + 'static {
    /// The name as given to the member's client.
    fn member_name(&self) -> &str;
    /// The name as stored in Redis (through the client's name mapper): what tells two
    /// members apart and orders them.
    fn member_key(&self) -> &str;
    fn kind_name(&self) -> &'static str;
    fn context(&self) -> &Arc<Engine>;
    /// The engine's acquisition as `owner` (`None`: the wait ran out).
    fn acquire_as_member(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> BoxFuture<'_, Result<Option<Acquired>>>;
    /// One unlock as `owner`, finished in the background if dropped.
    fn unlock_as_member(&self, owner: LockOwner) -> BoxFuture<'_, Result<UnlockReply>>;
    /// `PEXPIRE N lease_ms`; whether the key existed.
    fn set_lease(&self, lease_ms: u64) -> BoxFuture<'_, Result<bool>>;
    fn held_by(&self, owner: LockOwner) -> BoxFuture<'_, Result<bool>>;
    /// Stops `owner`'s renewal of one hold and releases it in the background.
    fn release_later(&self, owner: LockOwner);
}

impl<K: LockKind> Member for Lock<K> {
    fn member_name(&self) -> &str {
        self.name()
    }

    fn member_key(&self) -> &str {
        &self.name
    }

    fn kind_name(&self) -> &'static str {
        K::NAME
    }

    fn context(&self) -> &Arc<Engine> {
        &self.context
    }

    fn acquire_as_member(
        &self,
        owner: LockOwner,
        lease: Option<Duration>,
        wait: Wait,
    ) -> BoxFuture<'_, Result<Option<Acquired>>> {
        Box::pin(self.acquire_with_wait(owner, lease, wait))
    }

    fn unlock_as_member(&self, owner: LockOwner) -> BoxFuture<'_, Result<UnlockReply>> {
        Box::pin(self.unlock_as(owner))
    }

    fn set_lease(&self, lease_ms: u64) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            self.check()?;
            // Bounded by MAX_LEASE, so the cast cannot wrap.
            let set: i64 = self
                .context
                .redis
                .query(|r| r.pexpire(&*self.name, lease_ms as i64, None))
                .await
                .map_err(|e| self.redis_error(e))?;
            Ok(set == 1)
        })
    }

    fn held_by(&self, owner: LockOwner) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.is_held_by(owner))
    }

    fn release_later(&self, owner: LockOwner) {
        self.stop_renewal(owner);
        self.with_owner(owner).release_in_background();
    }
}

/// A lock of any kind, as a member of a [`MultiLock`](crate::MultiLock) or [`RedLock`](crate::RedLock).
///
/// Made from any [`Lock`] with `From`/`Into`, so one group can mix kinds:
///
/// ```no_run
/// # async fn demo(client: redisson_lock::Client) -> redisson_lock::Result<()> {
/// use redisson_lock::MultiLock;
/// use redisson_lock::kinds::AnyLock;
/// let group = MultiLock::new([
///     AnyLock::from(client.get_lock("account:1")),
///     client.get_fair_lock("account:2").into(),
///     client.get_read_write_lock("rates").read_lock().into(),
/// ])?;
/// # Ok(()) }
/// ```
///
/// The member's own owner (set with [`Lock::with_owner`]) is not used: the group acts as
/// its own owner for every member.
#[derive(Clone)]
pub struct AnyLock {
    pub(super) member: Arc<dyn Member>,
}

impl AnyLock {
    /// The member lock's name, as given to its client ([`Lock::name`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let member = redisson_lock::kinds::AnyLock::from(client.get_lock("a"));
    /// assert_eq!(member.name(), "a");
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        self.member.member_name()
    }

    /// The member lock's kind, e.g. `"reentrant"` or `"fair"`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(client: redisson_lock::Client) {
    /// let member = redisson_lock::kinds::AnyLock::from(client.get_fair_lock("a"));
    /// assert_eq!(member.kind(), "fair");
    /// # }
    /// ```
    pub fn kind(&self) -> &'static str {
        self.member.kind_name()
    }
}

impl<K: LockKind> From<Lock<K>> for AnyLock {
    fn from(lock: Lock<K>) -> AnyLock {
        AnyLock {
            member: Arc::new(lock),
        }
    }
}

impl fmt::Debug for AnyLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.member.fmt(f)
    }
}

/// Which server a member lives on, as its client was configured (address and database).
pub(super) fn server_of(context: &Engine) -> String {
    format!(
        "{:?}/{:?}",
        context.config.redis.server, context.config.redis.database
    )
}
