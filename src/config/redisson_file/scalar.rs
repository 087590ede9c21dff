//! Values as each Redisson version reads them.
//!
//! * **3.x** reads the file with Jackson: its YAML parser types each plain scalar with
//!   YAML 1.1's rules (snakeyaml 1.x: `yes`/`no`/`on`/`off` are booleans, `0042` an
//!   integer, `1e3` a float, `~` null) and keeps its text, then databind converts it to
//!   the setting's Java type (a string gets the text as written, `"2500"` reads as an
//!   integer after trimming, a float is truncated to an integer, a number is a boolean
//!   when not 0, null is 0 or `false`). An alias (`*name`) reads as the text `name`.
//! * **4.x** reads it with snakeyaml 2 into the setting's Java type: a string gets the
//!   text as written, an integer is YAML 1.1's (`0042` is octal 34, `0x2A`, `1_000`,
//!   `12:30` is 750), a boolean is `yes`/`no`/`true`/`false`/`on`/`off` in any case,
//!   null is refused for numbers and booleans. Aliases are the anchored node.
//! * **JSON** (3.x only) is Jackson's strict JSON, with the same conversions.

use super::literal::{
    Token, is_yaml11_null, jackson_string_boolean, jackson_token, java_double, java_integer,
    java_space, yaml11_integer,
};
use super::tree::{Kind, Node, NodeTag};

/// A Redisson version this reader follows (3.23 and 4.7 were checked; the layouts are
/// those of the 3.x and 4.x lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Redisson {
    V3,
    V4,
}

impl Redisson {
    /// The newer first: its reading (and its `ignored()` list) is preferred when both load.
    pub(super) const ALL: [Redisson; 2] = [Redisson::V4, Redisson::V3];

    pub(super) fn name(self) -> &'static str {
        match self {
            Redisson::V3 => "Redisson 3.x",
            Redisson::V4 => "Redisson 4.x",
        }
    }

    pub(super) fn other(self) -> Redisson {
        match self {
            Redisson::V3 => Redisson::V4,
            Redisson::V4 => Redisson::V3,
        }
    }
}

/// Why a value is refused (the reader adds the setting's path).
pub(super) type Why = String;

/// How one version reads the file.
#[derive(Clone, Copy)]
pub(super) struct Lens {
    pub(super) version: Redisson,
    /// `redisson.json` (3.x's `fromJSON`): plain scalars are JSON numbers and literals.
    pub(super) json: bool,
}

/// A node as a version sees it: 3.x reads an alias as its name, 4.x as its target.
pub(super) enum View<'n> {
    Scalar {
        text: &'n str,
        plain: bool,
        tag: Option<&'n NodeTag>,
    },
    /// An alias, as 3.x reads it: the text of its name.
    AliasName(&'n str),
    Seq(&'n [Node]),
    Map(&'n [(Node, Node)], Option<&'n NodeTag>),
}

impl Lens {
    pub(super) fn view<'n>(&self, node: &'n Node) -> View<'n> {
        match &node.kind {
            Kind::Scalar { text, plain, tag } => View::Scalar {
                text,
                plain: *plain,
                tag: tag.as_ref(),
            },
            Kind::Alias { name, target } => match self.version {
                Redisson::V3 => View::AliasName(name),
                Redisson::V4 => self.view(target),
            },
            Kind::Seq { items, .. } => View::Seq(items),
            Kind::Map { entries, tag } => View::Map(entries, tag.as_ref()),
        }
    }

    /// A mapping key's text.
    pub(super) fn key<'n>(&self, node: &'n Node) -> Result<&'n str, Why> {
        match self.view(node) {
            View::Scalar { text, .. } | View::AliasName(text) => Ok(text),
            _ => Err("a mapping key is not a plain name".into()),
        }
    }

    /// Whether the node is null as this version reads it.
    pub(super) fn is_null(&self, node: &Node) -> bool {
        match self.view(node) {
            View::Scalar { text, plain, tag } => match self.version {
                Redisson::V3 => matches!(self.token(text, plain, tag), Token::Null),
                Redisson::V4 => match tag.and_then(NodeTag::core_type) {
                    Some(core) => core == "null",
                    None => plain && tag.is_none() && is_yaml11_null(text),
                },
            },
            _ => false,
        }
    }

    /// A `String` setting: `None` for null.
    pub(super) fn string(&self, node: &Node) -> Result<Option<String>, Why> {
        match self.view(node) {
            View::AliasName(name) => Ok(Some(name.to_owned())),
            View::Scalar { text, plain, tag } => match self.version {
                Redisson::V3 => match self.token(text, plain, tag) {
                    Token::Null => Ok(None),
                    Token::Float(f) if java_double(f).is_none() => {
                        Err(format!("`{f}` reads as a malformed number"))
                    }
                    Token::Bool(_) | Token::Int | Token::Float(_) | Token::Str => {
                        Ok(Some(text.to_owned()))
                    }
                },
                Redisson::V4 => match tag {
                    None if plain && is_yaml11_null(text) => Ok(None),
                    None => Ok(Some(text.to_owned())),
                    Some(NodeTag::Core(core)) if core == "str" => Ok(Some(text.to_owned())),
                    Some(NodeTag::Core(core)) if core == "null" => Ok(None),
                    Some(tag) => Err(format!("a tagged value ({}) is not a text", show_tag(tag))),
                },
            },
            other => Err(format!("{} is not a single value", view_form(&other))),
        }
    }

    /// An `int` (`bits` 32) or `long` (64) setting. Null reads as 0 for 3.x and is
    /// refused by 4.x, as for Java's primitive settings.
    pub(super) fn integer(&self, node: &Node, bits: u32) -> Result<i64, Why> {
        let (min, max) = if bits == 32 {
            (i64::from(i32::MIN), i64::from(i32::MAX))
        } else {
            (i64::MIN, i64::MAX)
        };
        let ranged = |n: i128, text: &str| -> Result<i64, Why> {
            if n < i128::from(min) || n > i128::from(max) {
                Err(format!("`{text}` is out of range for a {bits}-bit number"))
            } else {
                Ok(n as i64)
            }
        };
        match self.view(node) {
            View::AliasName(name) => java_integer(name.trim_matches(java_space))
                .ok_or_else(|| not_integer(name))
                .and_then(|n| ranged(n, name)),
            View::Scalar { text, plain, tag } => match self.version {
                Redisson::V3 => match self.token(text, plain, tag) {
                    Token::Null => Ok(0),
                    Token::Bool(_) => Err(format!("`{text}` is a boolean, not a number")),
                    Token::Int => {
                        ranged(java_integer(text).ok_or_else(|| not_integer(text))?, text)
                    }
                    Token::Float(f) => {
                        let value = java_double(f)
                            .filter(|v| v.is_finite())
                            .ok_or_else(|| format!("`{f}` reads as a malformed number"))?;
                        if value < min as f64 || value > max as f64 {
                            return Err(format!("`{f}` is out of range for a {bits}-bit number"));
                        }
                        Ok(value.trunc() as i64)
                    }
                    Token::Str => {
                        let trimmed = text.trim_matches(java_space);
                        if trimmed.is_empty() || trimmed == "null" {
                            return Ok(0);
                        }
                        ranged(
                            java_integer(trimmed).ok_or_else(|| not_integer(text))?,
                            text,
                        )
                    }
                },
                Redisson::V4 => match tag.map(|t| t.core_type()) {
                    None | Some(Some("int")) => {
                        if tag.is_none() && plain && is_yaml11_null(text) {
                            return Err("null is not a number".into());
                        }
                        ranged(yaml11_integer(text).ok_or_else(|| not_integer(text))?, text)
                    }
                    _ => Err("a tagged value is not a number".into()),
                },
            },
            other => Err(format!("{} is not a number", view_form(&other))),
        }
    }

    /// A `boolean` setting (null: `false` for 3.x, refused by 4.x).
    pub(super) fn boolean(&self, node: &Node) -> Result<bool, Why> {
        let not_boolean = |text: &str| format!("`{text}` is not a boolean Redisson reads");
        match self.view(node) {
            View::AliasName(name) => jackson_string_boolean(name).ok_or_else(|| not_boolean(name)),
            View::Scalar { text, plain, tag } => match self.version {
                Redisson::V3 => match self.token(text, plain, tag) {
                    Token::Null => Ok(false),
                    Token::Bool(b) => Ok(b),
                    Token::Int => Ok(java_integer(text).is_some_and(|n| n != 0)),
                    Token::Float(_) => Err(format!("`{text}` is a decimal number, not a boolean")),
                    Token::Str => jackson_string_boolean(text).ok_or_else(|| not_boolean(text)),
                },
                Redisson::V4 => match tag.map(|t| t.core_type()) {
                    None | Some(Some("bool")) => {
                        if tag.is_none() && plain && is_yaml11_null(text) {
                            return Err("null is not a boolean".into());
                        }
                        match text.to_lowercase().as_str() {
                            "yes" | "true" | "on" => Ok(true),
                            "no" | "false" | "off" => Ok(false),
                            _ => Err(not_boolean(text)),
                        }
                    }
                    _ => Err("a tagged value is not a boolean".into()),
                },
            },
            other => Err(format!("{} is not a boolean", view_form(&other))),
        }
    }

    /// One of a Java enum's constants (`names`, in declaration order): `None` for null.
    pub(super) fn enumeration(
        &self,
        node: &Node,
        names: &[&'static str],
    ) -> Result<Option<&'static str>, Why> {
        let named = |text: &str| {
            names.iter().copied().find(|n| *n == text).ok_or_else(|| {
                format!(
                    "`{text}` is not one of {} (names are case-sensitive)",
                    names.join(", ")
                )
            })
        };
        match self.view(node) {
            View::AliasName(name) => named(name).map(Some),
            View::Scalar { text, plain, tag } => match self.version {
                Redisson::V3 => match self.token(text, plain, tag) {
                    Token::Null => Ok(None),
                    // Jackson takes a number as the constant's position.
                    Token::Int => java_integer(text)
                        .and_then(|i| usize::try_from(i).ok())
                        .and_then(|i| names.get(i).copied())
                        .map(Some)
                        .ok_or_else(|| format!("`{text}` is not one of {}", names.join(", "))),
                    Token::Str => named(text).map(Some),
                    Token::Bool(_) | Token::Float(_) => {
                        Err(format!("`{text}` is not one of {}", names.join(", ")))
                    }
                },
                Redisson::V4 => match tag {
                    None if plain && is_yaml11_null(text) => Ok(None),
                    None => named(text).map(Some),
                    Some(_) => Err("a tagged value is not one of the names".into()),
                },
            },
            other => Err(format!("{} is not a name", view_form(&other))),
        }
    }

    /// A class-valued setting (`!<org.redisson.codec.Kryo5Codec> {}`, or 3.x's
    /// `{"class": "..."}`): the class name, `None` for null.
    pub(super) fn class(&self, node: &Node) -> Result<Option<String>, Why> {
        if self.is_null(node) {
            return Ok(None);
        }
        let untagged_class = |entries: &[(Node, Node)]| {
            entries.iter().rev().find_map(|(k, v)| {
                (self.key(k).ok() == Some("class"))
                    .then(|| self.string(v).ok().flatten())
                    .flatten()
            })
        };
        match (self.view(node), self.version) {
            (View::Map(_, Some(NodeTag::Verbatim(class))), _) => Ok(Some(class.clone())),
            (View::Map(_, Some(NodeTag::Local(class))), Redisson::V3) => Ok(Some(class.clone())),
            (View::Map(_, Some(NodeTag::Core(class))), Redisson::V4)
                if !matches!(class.as_str(), "map" | "omap" | "set") =>
            {
                Ok(Some(class.clone()))
            }
            (View::Map(_, Some(NodeTag::Core(class))), Redisson::V3) => Err(format!(
                "`!!{class}`: Redisson 3.x looks for a class named `tag:yaml.org,2002:{class}`; \
                 write `!<{class}> {{}}`"
            )),
            (View::Map(_, Some(NodeTag::Local(class))), Redisson::V4) => Err(format!(
                "`!{class}` is a local tag Redisson 4.x refuses; write `!<{class}> {{}}`"
            )),
            (View::Map(entries, None), Redisson::V3) => {
                untagged_class(entries).map(Some).ok_or_else(|| {
                    "a class is written `!<fully.qualified.Class> {}` (or `{\"class\": \"...\"}`)"
                        .into()
                })
            }
            (View::Map(..), _) => Err("a class is written `!<fully.qualified.Class> {}`".into()),
            (other, _) => Err(format!(
                "{} is not a class (`!<fully.qualified.Class> {{}}`)",
                view_form(&other)
            )),
        }
    }

    /// A list of texts (`nodeAddresses`, `sslProtocols`): `None` for null.
    pub(super) fn string_list(&self, node: &Node) -> Result<Option<Vec<String>>, Why> {
        if self.is_null(node) {
            return Ok(None);
        }
        match self.view(node) {
            View::Seq(items) => items
                .iter()
                .map(|item| self.string(item).map(Option::unwrap_or_default))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            other => Err(format!("{} is not a list", view_form(&other))),
        }
    }

    /// A mapping of texts (`natMap`): `None` for null.
    pub(super) fn string_map(&self, node: &Node) -> Result<Option<Vec<(String, String)>>, Why> {
        if self.is_null(node) {
            return Ok(None);
        }
        match self.view(node) {
            View::Map(entries, _) => entries
                .iter()
                .map(|(k, v)| Ok((self.key(k)?.to_owned(), self.string(v)?.unwrap_or_default())))
                .collect::<Result<Vec<_>, Why>>()
                .map(Some),
            other => Err(format!("{} is not a mapping", view_form(&other))),
        }
    }

    /// How 3.x's parser types a scalar before databind converts it.
    fn token<'t>(&self, text: &'t str, plain: bool, tag: Option<&NodeTag>) -> Token<'t> {
        jackson_token(self.json, text, plain, tag)
    }
}

fn not_integer(text: &str) -> Why {
    format!(
        "`{text}` is not an integer Redisson reads (times are whole milliseconds, \
         without a unit)"
    )
}

fn view_form(view: &View<'_>) -> &'static str {
    match view {
        View::Scalar { .. } | View::AliasName(_) => "a single value",
        View::Seq(..) => "a list",
        View::Map(..) => "a mapping",
    }
}

fn show_tag(tag: &NodeTag) -> String {
    match tag {
        NodeTag::Verbatim(t) => format!("!<{t}>"),
        NodeTag::Core(t) => format!("!!{t}"),
        NodeTag::Local(t) => format!("!{t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tree::parse_yaml;
    use super::*;

    fn value(yaml: &str) -> Node {
        let docs = parse_yaml(&format!("k: {yaml}\n")).unwrap();
        let Some(Node {
            kind: Kind::Map { entries, .. },
            ..
        }) = docs.into_iter().next().flatten()
        else {
            panic!()
        };
        entries.into_iter().next().unwrap().1
    }

    const V3: Lens = Lens {
        version: Redisson::V3,
        json: false,
    };
    const V4: Lens = Lens {
        version: Redisson::V4,
        json: false,
    };

    #[test]
    fn integers_as_each_version_reads_them() {
        // (text, 3.x, 4.x) as real Redisson 3.23.3 and 4.7.0 printed them.
        let cases: &[(&str, Option<i64>, Option<i64>)] = &[
            ("0042", Some(42), Some(34)),
            ("\"0042\"", Some(42), Some(34)),
            ("42", Some(42), Some(42)),
            ("+42", Some(42), Some(42)),
            ("-0042", Some(-42), Some(-34)),
            ("0x2A", None, Some(42)),
            ("4_2", None, Some(42)),
            ("0_42", None, Some(34)),
            ("42.0", Some(42), None),
            ("1e3", Some(1000), None),
            (".5", Some(0), None),
            (".inf", None, None),
            ("yes", None, None),
            ("y", None, None),
            ("~", Some(0), None),
            ("\"\"", Some(0), None),
            ("\"  \"", Some(0), None),
            ("\" 42\"", Some(42), None),
            ("12:30", None, Some(750)),
            ("09", Some(9), None),
            ("\"09\"", Some(9), None),
            ("0b101010", None, Some(42)),
            ("2147483647", Some(2147483647), Some(2147483647)),
            ("2147483648", None, None),
            ("\"42.0\"", None, None),
            ("!!str 42", Some(42), None),
            ("!!int \"42\"", Some(42), Some(42)),
            ("2001-12-14", None, None),
        ];
        for (text, v3, v4) in cases {
            let node = value(text);
            assert_eq!(V3.integer(&node, 32).ok(), *v3, "3.x {text}");
            assert_eq!(V4.integer(&node, 32).ok(), *v4, "4.x {text}");
        }
        assert_eq!(V3.integer(&value("2147483648"), 64), Ok(2147483648));
    }

    #[test]
    fn booleans_as_each_version_reads_them() {
        let cases: &[(&str, Option<bool>, Option<bool>)] = &[
            ("yes", Some(true), Some(true)),
            ("no", Some(false), Some(false)),
            ("on", Some(true), Some(true)),
            ("OFF", Some(false), Some(false)),
            ("y", None, None),
            ("yEs", None, Some(true)),
            ("\"yes\"", None, Some(true)),
            ("\"True\"", Some(true), Some(true)),
            ("42", Some(true), None),
            ("0", Some(false), None),
            ("-42", Some(true), None),
            ("+42", None, None),
            ("1.5", None, None),
            ("~", Some(false), None),
            ("\"\"", Some(false), None),
            ("\"0\"", None, None),
            ("!!int \"42\"", Some(true), None),
        ];
        for (text, v3, v4) in cases {
            let node = value(text);
            assert_eq!(V3.boolean(&node).ok(), *v3, "3.x {text}");
            assert_eq!(V4.boolean(&node).ok(), *v4, "4.x {text}");
        }
    }

    #[test]
    fn strings_stay_as_written() {
        // (text, 3.x, 4.x); `None`: refused, `Some(None)`: null.
        type Case<'a> = (&'a str, Option<Option<&'a str>>, Option<Option<&'a str>>);
        let cases: &[Case<'_>] = &[
            ("0042", Some(Some("0042")), Some(Some("0042"))),
            ("yes", Some(Some("yes")), Some(Some("yes"))),
            ("1e3", Some(Some("1e3")), Some(Some("1e3"))),
            (".inf", None, Some(Some(".inf"))),
            ("-.Inf", None, Some(Some("-.Inf"))),
            ("~", Some(None), Some(None)),
            ("\"null\"", Some(Some("null")), Some(Some("null"))),
            ("12:30", Some(Some("12:30")), Some(Some("12:30"))),
            ("!!int \"42\"", Some(Some("42")), None),
            ("!!str 42", Some(Some("42")), Some(Some("42"))),
        ];
        for (text, v3, v4) in cases {
            let node = value(text);
            let show = |r: Result<Option<String>, Why>| r.ok();
            assert_eq!(
                show(V3.string(&node)),
                v3.map(|o| o.map(str::to_owned)),
                "3.x {text}"
            );
            assert_eq!(
                show(V4.string(&node)),
                v4.map(|o| o.map(str::to_owned)),
                "4.x {text}"
            );
        }
    }

    #[test]
    fn aliases_differ_between_versions() {
        let docs = parse_yaml("a: &pw s3cret\nb: *pw\n").unwrap();
        let Some(Node {
            kind: Kind::Map { entries, .. },
            ..
        }) = &docs[0]
        else {
            panic!()
        };
        assert_eq!(V3.string(&entries[1].1), Ok(Some("pw".into())));
        assert_eq!(V4.string(&entries[1].1), Ok(Some("s3cret".into())));
    }

    #[test]
    fn classes_by_tag() {
        let verbatim = value("!<org.redisson.codec.Kryo5Codec> {}");
        assert_eq!(
            V3.class(&verbatim).unwrap().as_deref(),
            Some("org.redisson.codec.Kryo5Codec")
        );
        assert_eq!(
            V4.class(&verbatim).unwrap().as_deref(),
            Some("org.redisson.codec.Kryo5Codec")
        );
        let core = value("!!org.x.C {}");
        assert!(V3.class(&core).is_err());
        assert_eq!(V4.class(&core).unwrap().as_deref(), Some("org.x.C"));
        let local = value("!org.x.C {}");
        assert_eq!(V3.class(&local).unwrap().as_deref(), Some("org.x.C"));
        assert!(V4.class(&local).is_err());
        assert!(V3.class(&value("org.x.C")).is_err());
        assert_eq!(V4.class(&value("null")), Ok(None));
    }
}
