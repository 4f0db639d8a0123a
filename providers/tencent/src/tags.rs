//! Tencent Cloud's tag naming rules ("Use Limits",
//! https://www.tencentcloud.com/document/product/651/13354): a key is 1 to 127
//! and a value 1 to 255 Unicode characters; letters of any script, digits,
//! spaces (never first or last) and `+ - = . _ : / @ ( ) [ ] , ; > <` (typed
//! in Chinese also `【 】 ： （ ）`); keys starting with `qcs:` or `project:`
//! are reserved. CreateVpc and the other creating calls refuse a tag that
//! breaks them, so `gpuform validate` checks them first.

/// Why a tag breaks the rules, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagProblem {
    pub message: String,
    pub hint: String,
}

const PUNCTUATION: &str = "+-=._:/@()[],;><【】：（）";
const KEY_MAX: usize = 127;
const VALUE_MAX: usize = 255;
/// Reserved key prefixes: `qcs:` and `project:` (651/13354), and `qcloud`,
/// `tencent`, `project` in CreateTag's error table (651/33015).
const RESERVED_KEY_PREFIXES: &[&str] = &["qcs:", "project", "qcloud", "tencent"];

fn allowed(c: char) -> bool {
    c.is_alphanumeric() || c == ' ' || PUNCTUATION.contains(c)
}

fn check_text(text: &str, what: &str, max: usize) -> Result<(), TagProblem> {
    let n = text.chars().count();
    if n == 0 {
        return Err(TagProblem {
            message: format!("a Tencent Cloud tag {what} cannot be empty"),
            hint: format!("give it 1 to {max} characters"),
        });
    }
    if n > max {
        return Err(TagProblem {
            message: format!("this tag {what} has {n} characters; Tencent Cloud allows {max}"),
            hint: format!("shorten it to at most {max} characters"),
        });
    }
    if text.starts_with(' ') || text.ends_with(' ') {
        return Err(TagProblem {
            message: format!("a Tencent Cloud tag {what} cannot start or end with a space"),
            hint: "remove the leading or trailing spaces".into(),
        });
    }
    if let Some(c) = text.chars().find(|c| !allowed(*c)) {
        return Err(TagProblem {
            message: format!("Tencent Cloud does not allow `{c}` in a tag {what}"),
            hint: "use letters, digits, spaces and + - = . _ : / @ ( ) [ ] , ; > < only".into(),
        });
    }
    Ok(())
}

/// Checks a tag key against Tencent's rules.
pub fn check_key(key: &str) -> Result<(), TagProblem> {
    check_text(key, "key", KEY_MAX)?;
    let lower = key.to_lowercase();
    if let Some(p) = RESERVED_KEY_PREFIXES.iter().find(|p| lower.starts_with(*p)) {
        return Err(TagProblem {
            message: format!("tag keys starting with `{p}` are reserved by Tencent Cloud"),
            hint: "choose another key".into(),
        });
    }
    Ok(())
}

/// Checks a tag value against Tencent's rules.
pub fn check_value(value: &str) -> Result<(), TagProblem> {
    check_text(value, "value", VALUE_MAX)
}

/// Checks a user tag (key and value) against Tencent's rules.
pub fn check(key: &str, value: &str) -> Result<(), TagProblem> {
    check_key(key)?;
    check_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_rules() {
        assert!(check("team", "research").is_ok());
        assert!(check("成本中心", "研发部 (北京)").is_ok());
        assert!(check("owner", "a.b_c-d+e=f:g/h@i[j],k;l>m<").is_ok());
        assert!(check("team", "").is_err(), "values are 1-255 characters");
        assert!(check("team", &"x".repeat(256)).is_err());
        assert!(check(&"k".repeat(128), "v").is_err());
        assert!(check("team", " research").is_err());
        assert!(check("team", "r&d").is_err());
        assert!(check("team", "a*b").is_err());
        assert!(check("qcs:x", "v").is_err());
        assert!(check("project:x", "v").is_err());
    }
}
