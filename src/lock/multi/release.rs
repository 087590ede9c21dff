//! Giving a group's members back: one unlock per member, all at the same time, with the
//! rule's way of counting failures ([`LockGroup::unlock`], `GroupGuard::unlock`).

use super::group::LockGroup;
use super::rules::GroupRule;
use crate::error::{Error, Result};
use crate::lock::releasing::UnlockReply;
use crate::names::owner::LockOwner;

impl<R: GroupRule> LockGroup<R> {
    /// Unlocks `indices` as `owner`, all at the same time.
    pub(super) async fn unlock_members(&self, owner: LockOwner, indices: &[usize]) -> Result<()> {
        let replies = futures::future::join_all(indices.iter().map(|&index| {
            let member = &self.members[index];
            async move {
                let unlock = member.unlock_as_member(owner);
                if R::UNLOCK_IGNORES_FAILURES {
                    // Bounded: a member on a dead server would take its retries' time. The
                    // unlock goes on in the background.
                    let limit = member.context().config.settings.response_timeout;
                    match tokio::time::timeout(limit, unlock).await {
                        Ok(reply) => (member, reply),
                        Err(_) => (
                            member,
                            Err(Error::Timeout {
                                what: "unlocking a RedLock member",
                                after: limit,
                            }),
                        ),
                    }
                } else {
                    (member, unlock.await)
                }
            }
        }))
        .await;
        let mut first = None;
        let mut shut_down = false;
        for (member, reply) in replies {
            let error = match reply {
                Ok(
                    UnlockReply::StillHeld
                    | UnlockReply::Released
                    | UnlockReply::Yielded { .. }
                    | UnlockReply::Handed { .. },
                ) => continue,
                Ok(UnlockReply::NotOwner) => Error::NotOwner {
                    client_id: member.context().id.clone(),
                    owner,
                },
                Err(error) => error,
            };
            shut_down |= matches!(error, Error::Shutdown);
            if R::UNLOCK_IGNORES_FAILURES {
                tracing::debug!(lock = member.member_key(), %error, "RedLock member not unlocked");
            } else {
                first = first.or(Some(error));
            }
        }
        // A shut-down client says more than the other members' answers.
        if shut_down {
            return Err(Error::Shutdown);
        }
        first.map_or(Ok(()), Err)
    }
}
