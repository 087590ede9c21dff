//! The file as a tree of what Redisson's readers see: every scalar as written with its
//! style and tag, mappings in file order (duplicates kept), anchors, and aliases with
//! their names (Redisson 3.x reads an alias as its name; 4.x as the anchored node).
//!
//! Scalars are not typed here: Redisson 3.x (Jackson) and 4.x (snakeyaml) type them
//! differently, and the reader does it per version (`scalar.rs`).

use saphyr_parser::{Event, Parser, ScalarStyle, Span, SpannedEventReceiver, Tag};

use super::source::file_error;
use crate::error::{Error, RedissonFileError, Result};

/// One node of the file.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    /// The anchor this node was defined with (`&name`), 0 for none: snakeyaml builds an
    /// anchored node once and gives every alias the same object.
    pub(super) anchor: usize,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Scalar {
        text: String,
        /// Plain (`42`, `yes`), or written as a string (quoted, `|`, `>`).
        plain: bool,
        tag: Option<NodeTag>,
    },
    Seq {
        items: Vec<Node>,
    },
    Map {
        entries: Vec<(Node, Node)>,
        tag: Option<NodeTag>,
    },
    /// `*name`, and the node its anchor stands for.
    Alias {
        name: String,
        target: Box<Node>,
    },
}

/// A node's tag, by how it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NodeTag {
    /// `!<name>`: a class (or a full `tag:yaml.org,2002:` tag).
    Verbatim(String),
    /// `!!name`: `tag:yaml.org,2002:name` (`!!str`, `!!int`, or a class for 4.x).
    Core(String),
    /// `!name`: a local tag (a class for 3.x; 4.x refuses it).
    Local(String),
}

impl NodeTag {
    fn from_parser(tag: &Tag) -> Option<NodeTag> {
        if tag.handle == "tag:yaml.org,2002:" {
            Some(NodeTag::Core(tag.suffix.clone()))
        } else if tag.handle.is_empty() {
            if tag.suffix == "!" {
                None // the non-specific `!`
            } else if let Some(core) = tag.suffix.strip_prefix("tag:yaml.org,2002:") {
                Some(NodeTag::Core(core.to_owned()))
            } else {
                Some(NodeTag::Verbatim(tag.suffix.clone()))
            }
        } else if tag.handle == "!" {
            Some(NodeTag::Local(tag.suffix.clone()))
        } else {
            Some(NodeTag::Verbatim(format!("{}{}", tag.handle, tag.suffix)))
        }
    }

    /// The core type (`str`, `int`, `bool`, `float`, `null`) this tag names, if it does.
    pub(super) fn core_type(&self) -> Option<&str> {
        match self {
            NodeTag::Core(name) => Some(name),
            _ => None,
        }
    }
}

impl Node {
    /// What to call this node's form in an error.
    pub(super) fn form(&self) -> &'static str {
        match self.kind {
            Kind::Scalar { .. } => "a single value",
            Kind::Seq { .. } => "a list",
            Kind::Map { .. } => "a mapping",
            Kind::Alias { .. } => "an alias",
        }
    }
}

/// The documents of a YAML text (`None`: an empty document).
pub(super) fn parse_yaml(text: &str) -> Result<Vec<Option<Node>>> {
    let mut builder = Builder::new(text);
    let mut parser = Parser::new_from_str(text);
    parser
        .load(&mut builder, true)
        .map_err(|e| syntax(format!("not YAML: {e}")))?;
    if let Some(error) = builder.error {
        return Err(error);
    }
    Ok(builder.documents)
}

/// A `redisson.json` text as Redisson 3.x's Jackson reads it: strict JSON (no comments,
/// no single quotes, no leading zeros), the first value of the text, which must be an
/// object. Its tree is read with the YAML parser (JSON is YAML's flow style), which keeps
/// numbers as written (`4.50`).
pub(super) fn parse_json(text: &str) -> Result<Node> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let first = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(e)) => return Err(syntax(format!("not JSON: {e}"))),
        None => return Err(syntax("no JSON value (the file is empty)")),
    };
    if !first.is_object() {
        return Err(syntax("the JSON value is not an object of settings"));
    }
    let end = values.byte_offset();
    let documents = parse_yaml(&text[..end])?;
    match documents.into_iter().next().flatten() {
        Some(node) => Ok(node),
        None => Err(syntax("no JSON value (the file is empty)")),
    }
}

pub(super) fn syntax(reason: impl Into<String>) -> Error {
    file_error(RedissonFileError::Syntax, "<file>", reason)
}

/// Builds [`Node`]s from the parser's events.
struct Builder<'t> {
    text: &'t str,
    documents: Vec<Option<Node>>,
    /// Open collections: the node so far, its anchor, and for a mapping a key waiting
    /// for its value.
    stack: Vec<(Node, Option<Node>)>,
    anchors: std::collections::HashMap<usize, Node>,
    /// Nodes copied for aliases so far (a bound against alias bombs).
    copied: usize,
    /// Whether the current document's root was pushed (an empty document has none).
    has_root: bool,
    error: Option<Error>,
}

/// The most nodes aliases may copy: far beyond a configuration file, far below an alias
/// bomb's exponential growth.
const ALIAS_BUDGET: usize = 100_000;

impl<'t> Builder<'t> {
    fn new(text: &'t str) -> Self {
        Builder {
            text,
            documents: Vec::new(),
            stack: Vec::new(),
            anchors: Default::default(),
            copied: 0,
            has_root: false,
            error: None,
        }
    }

    fn push_value(&mut self, node: Node) {
        if node.anchor != 0 {
            self.anchors.insert(node.anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                self.documents.push(Some(node));
                self.has_root = true;
            }
            Some((parent, pending_key)) => match &mut parent.kind {
                Kind::Seq { items, .. } => items.push(node),
                Kind::Map { entries, .. } => match pending_key.take() {
                    None => *pending_key = Some(node),
                    Some(key) => entries.push((key, node)),
                },
                _ => {}
            },
        }
    }

    /// The alias's name, from the text at its span (`*name`).
    fn alias_name(&self, span: &Span) -> String {
        let name: String = self
            .text
            .chars()
            .skip(span.start.index())
            .skip_while(|c| *c == '*')
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
            .collect();
        if name.is_empty() {
            "alias".to_owned()
        } else {
            name
        }
    }
}

fn size(node: &Node) -> usize {
    1 + match &node.kind {
        Kind::Scalar { .. } => 0,
        Kind::Seq { items, .. } => items.iter().map(size).sum(),
        Kind::Map { entries, .. } => entries.iter().map(|(k, v)| size(k) + size(v)).sum(),
        Kind::Alias { target, .. } => size(target),
    }
}

impl<'input> SpannedEventReceiver<'input> for Builder<'_> {
    fn on_event(&mut self, event: Event<'input>, span: Span) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
            Event::DocumentStart(_) => self.has_root = false,
            Event::DocumentEnd => {
                if !self.has_root {
                    self.documents.push(None);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let node = Node {
                    kind: Kind::Scalar {
                        text: text.into_owned(),
                        plain: style == ScalarStyle::Plain,
                        tag: tag.as_deref().and_then(NodeTag::from_parser),
                    },
                    anchor,
                };
                self.push_value(node);
            }
            Event::SequenceStart(anchor, _) => {
                let node = Node {
                    kind: Kind::Seq { items: Vec::new() },
                    anchor,
                };
                self.stack.push((node, None));
            }
            Event::MappingStart(anchor, tag) => {
                let node = Node {
                    kind: Kind::Map {
                        entries: Vec::new(),
                        tag: tag.as_deref().and_then(NodeTag::from_parser),
                    },
                    anchor,
                };
                self.stack.push((node, None));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _)) = self.stack.pop() {
                    self.push_value(node);
                }
            }
            Event::Alias(id) => {
                let Some(target) = self.anchors.get(&id).cloned() else {
                    self.error = Some(syntax("an alias to an unknown anchor"));
                    return;
                };
                self.copied += size(&target);
                if self.copied > ALIAS_BUDGET {
                    self.error = Some(syntax(
                        "aliases expand to too many nodes for a configuration file",
                    ));
                    return;
                }
                let name = self.alias_name(&span);
                self.push_value(Node {
                    kind: Kind::Alias {
                        name,
                        target: Box::new(target),
                    },
                    anchor: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(node: &Node) -> (&str, bool, Option<&NodeTag>) {
        match &node.kind {
            Kind::Scalar { text, plain, tag } => (text, *plain, tag.as_ref()),
            other => panic!("not a scalar: {other:?}"),
        }
    }

    fn entries(node: &Node) -> &[(Node, Node)] {
        match &node.kind {
            Kind::Map { entries, .. } => entries,
            other => panic!("not a mapping: {other:?}"),
        }
    }

    #[test]
    fn scalars_keep_their_text_style_and_tag() {
        let docs =
            parse_yaml("a: 0042\nb: \"0042\"\nc: !<org.x.C> {}\nd: !!str 1\ne: !loc {}\nf: *x\n");
        // `*x` names no anchor: refused.
        assert!(docs.is_err());
        let docs = parse_yaml(
            "a: &x 0042\nb: \"0042\"\nc: !<org.x.C> {}\nd: !!str 1\ne: !loc {}\nf: *x\ng: |\n  l\n",
        )
        .unwrap();
        let [Some(root)] = docs.as_slice() else {
            panic!("{docs:?}")
        };
        let e = entries(root);
        assert_eq!(scalar(&e[0].1), ("0042", true, None));
        assert_ne!(e[0].1.anchor, 0);
        assert_eq!(scalar(&e[1].1), ("0042", false, None));
        assert!(matches!(&e[2].1.kind,
            Kind::Map { tag: Some(NodeTag::Verbatim(c)), .. } if c == "org.x.C"));
        assert_eq!(
            scalar(&e[3].1),
            ("1", true, Some(&NodeTag::Core("str".into())))
        );
        assert!(matches!(&e[4].1.kind,
            Kind::Map { tag: Some(NodeTag::Local(c)), .. } if c == "loc"));
        match &e[5].1.kind {
            Kind::Alias { name, target } => {
                assert_eq!(name, "x");
                assert_eq!(scalar(target).0, "0042");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(scalar(&e[6].1), ("l\n", false, None));
    }

    #[test]
    fn alias_names_after_wide_characters() {
        let docs = parse_yaml("é: &ü v\nk: [*ü]\n").unwrap();
        let e = entries(docs[0].as_ref().unwrap());
        let Kind::Seq { items, .. } = &e[1].1.kind else {
            panic!()
        };
        assert!(matches!(&items[0].kind, Kind::Alias { name, .. } if name == "ü"));
    }

    #[test]
    fn documents_duplicates_bom_and_crlf() {
        let docs = parse_yaml("a: 1\n---\nb: 2\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(parse_yaml("").unwrap().iter().all(Option::is_none));
        let docs = parse_yaml("\u{feff}a: 1\r\na: 2\r\n").unwrap();
        assert_eq!(entries(docs[0].as_ref().unwrap()).len(), 2);
    }

    #[test]
    fn json_is_strict_and_keeps_numbers_as_written() {
        let node = parse_json("{\"a\": 4.50, \"b\": \"x\"} {\"ignored\": 1}").unwrap();
        let e = entries(&node);
        assert_eq!(scalar(&e[0].1), ("4.50", true, None));
        assert_eq!(scalar(&e[1].1), ("x", false, None));
        for bad in [
            "{\"a\": 0042}",
            "{'a': 1}",
            "{\"a\": 1 /* c */}",
            "# c\n{}",
            "[1]",
            "",
        ] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }
}
