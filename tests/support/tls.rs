//! A TLS `redis-server` for the TLS tests: a certificate authority, a server certificate
//! for `localhost` / `127.0.0.1` and a client certificate, all generated with `openssl` when
//! the server starts (valid for two days, deleted with the server: nothing that expires is
//! committed), and a second, unrelated CA to be wrong with.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{RedisServer, free_port};

/// The PEM files of one test PKI.
pub struct Pki {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A CA that signed nothing here.
    pub other_ca: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run openssl ({e}); the TLS tests generate their certificates with it.\n\
                 Install it with: sudo apt-get install -y openssl"
            )
        });
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pki {
    /// Generates a CA, a server certificate (`localhost`, `127.0.0.1`), a client
    /// certificate and another CA, as EC P-256 keys in PKCS#8 PEM.
    pub fn generate(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).expect("pki dir");
        let ca = |name: &str, subject: &str| {
            openssl(
                dir,
                &[
                    "req",
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-days",
                    "2",
                    "-subj",
                    subject,
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.crt"),
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            )
        };
        ca("ca", "/CN=redisson-lock test CA");
        ca("other-ca", "/CN=redisson-lock other CA");
        let leaf = |name: &str, subject: &str, extensions: &str| {
            openssl(
                dir,
                &[
                    "req",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-subj",
                    subject,
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr"),
                ],
            );
            std::fs::write(dir.join(format!("{name}.ext")), extensions).expect("ext file");
            openssl(
                dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &format!("{name}.csr"),
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-days",
                    "2",
                    "-out",
                    &format!("{name}.crt"),
                    "-extfile",
                    &format!("{name}.ext"),
                ],
            );
        };
        leaf(
            "server",
            "/CN=localhost",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n\
             basicConstraints=CA:FALSE\n",
        );
        leaf(
            "client",
            "/CN=redisson-lock test client",
            "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
        );
        Pki {
            dir: dir.to_owned(),
            ca: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            other_ca: dir.join("other-ca.crt"),
        }
    }
}

/// A `redis-server` with a TLS port (and a plaintext port for the tests' raw reads).
pub struct TlsRedisServer {
    /// The plaintext side, for raw reads; it owns the process.
    pub plain: RedisServer,
    pub tls_port: u16,
    pub pki: Pki,
}

impl TlsRedisServer {
    /// A server with TLS on a port of its own; `extra` adds options (e.g.
    /// `--tls-auth-clients yes`, `--requirepass`).
    pub fn start(extra: &[&str]) -> TlsRedisServer {
        let dir = std::env::temp_dir().join(format!(
            "redisson-lock-tls-{}-{}",
            std::process::id(),
            free_port()
        ));
        let pki = Pki::generate(&dir);
        for _ in 0..5 {
            let tls_port = free_port();
            let port = tls_port.to_string();
            let mut args: Vec<&str> = vec![
                "--tls-port",
                &port,
                "--tls-cert-file",
                pki.server_cert.to_str().expect("utf-8 path"),
                "--tls-key-file",
                pki.server_key.to_str().expect("utf-8 path"),
                "--tls-ca-cert-file",
                pki.ca.to_str().expect("utf-8 path"),
            ];
            if !extra.contains(&"--tls-auth-clients") {
                args.extend(["--tls-auth-clients", "no"]);
            }
            args.extend(extra);
            let plain = RedisServer::start_with(&args);
            if port_open(tls_port, Duration::from_secs(5)) {
                return TlsRedisServer {
                    plain,
                    tls_port,
                    pki,
                };
            }
            // The TLS port was taken in the meantime: the server is dropped; try another.
        }
        panic!("redis-server did not open a TLS port after 5 tries (is it built with TLS?)");
    }

    /// `rediss://localhost:<tls port>` with an optional `user:password@`.
    pub fn url(&self, auth: &str) -> String {
        format!("rediss://{auth}localhost:{}", self.tls_port)
    }
}

/// Whether a loopback port accepts connections within `limit`.
fn port_open(port: u16, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.pki.dir);
    }
}
