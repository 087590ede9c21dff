mod support;
#[tokio::test]
async fn sizes() {
    let server = support::RedisServer::start();
    let client = server.client().await;
    let l = client.get_lock("x");
    eprintln!("lock {} unlock {} try_lock {} try_lock_for {} acquire {}", std::mem::size_of_val(&l.lock()), std::mem::size_of_val(&l.unlock()), std::mem::size_of_val(&l.try_lock()), std::mem::size_of_val(&l.try_lock_for(std::time::Duration::from_secs(1))), std::mem::size_of_val(&l.acquire()));
}
