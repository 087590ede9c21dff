use crate::support;
use support::*;

#[tokio::test]
async fn lock_unlock_roundtrip() {
    let Bed(_server, client, raw, name) = Bed::new("smoke").await;
    let lock = client.get_lock(&name);
    lock.lock().await.unwrap();
    lock.lock().await.unwrap();
    let field = format!("{}:{}", client.id(), lock.owner());
    assert_eq!(hgetall(&raw, &name).await, vec![(field, "2".to_string())]);
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    lock.unlock().await.unwrap();
    lock.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert!(matches!(
        lock.unlock().await,
        Err(redisson_lock::Error::NotOwner { .. })
    ));
    client.shutdown().await.unwrap();
}
