//! The secret values a file holds (passwords, secret-looking variables), masked in every
//! error it gives.

use super::address;
use super::tree::{Kind, Node};

/// Texts never to show in an error: the values of password settings, passwords in
/// addresses, and the values of variables with a secret-looking name.
#[derive(Default)]
pub(super) struct Secrets {
    values: Vec<String>,
}

/// Settings whose value is a secret.
const SECRET_KEYS: &[&str] = &[
    "password",
    "sentinelPassword",
    "sslTruststorePassword",
    "sslKeystorePassword",
];

impl Secrets {
    pub(super) fn add(&mut self, value: &str) {
        if !value.is_empty() && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_owned());
            // Longer first, so that a secret holding another is hidden whole.
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    pub(super) fn add_variables(&mut self, pasted: &[(String, String)]) {
        for (name, value) in pasted {
            let upper = name.to_ascii_uppercase();
            if ["PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CRED"]
                .iter()
                .any(|word| upper.contains(word))
            {
                self.add(value);
            }
        }
    }

    pub(super) fn add_tree(&mut self, node: &Node) {
        match &node.kind {
            Kind::Scalar { text, .. } => {
                if text.contains("://") && text.contains('@') {
                    for secret in address::secrets(text) {
                        self.add(&secret);
                    }
                }
            }
            Kind::Seq { items, .. } => items.iter().for_each(|item| self.add_tree(item)),
            Kind::Map { entries, .. } => {
                for (key, value) in entries {
                    let secret_key = matches!(&key.kind,
                        Kind::Scalar { text, .. } if SECRET_KEYS.contains(&text.as_str()));
                    if secret_key {
                        self.add_scalars(value);
                    }
                    self.add_tree(value);
                }
            }
            Kind::Alias { target, .. } => self.add_tree(target),
        }
    }

    pub(super) fn add_scalars(&mut self, node: &Node) {
        match &node.kind {
            Kind::Scalar { text, .. } => self.add(text),
            Kind::Alias { target, .. } => self.add_scalars(target),
            _ => {}
        }
    }

    /// `text` with every secret replaced by `***`.
    pub(super) fn mask(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.values {
            // (Two letters would mask words of the message, not a secret pasted into it.)
            if secret.chars().count() >= 3 {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }
}
