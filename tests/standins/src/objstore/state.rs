//! The buckets the stand-in keeps and what each operation does to them,
//! as the OSS API reference documents (PutBucket, Get/PutBucketTags,
//! Put/GetBucketVersioning, Put/Get/DeleteBucketEncryption,
//! Put/Get/DeleteBucketLifecycle, Put/GetBucketAcl, GetBucketInfo,
//! ListObjects, ListObjectVersions, DeleteMultipleObjects, DeleteBucket,
//! ListBuckets, ListMultipartUploads, AbortMultipartUpload). Answers are
//! XML text written by [`super::xml`].
//!
//! A bucket with an incomplete multipart upload is not empty: OSS ("Delete
//! a bucket": delete the fragments of multipart uploads first, with
//! ListMultipartUploads and AbortMultipartUpload), OBS ("the bucket must
//! contain no objects, historical versions, or fragments") and COS refuse
//! its DeleteBucket with `BucketNotEmpty`.

use super::xml::{doc, esc, leaf, parse, El};
use super::Flavor;
use std::collections::BTreeMap;

/// An error answer: HTTP status, `Code`, `Message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

pub fn err(status: u16, code: &str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code: code.to_string(),
        message: message.into(),
    }
}

fn malformed(why: impl std::fmt::Display) -> ApiError {
    err(
        400,
        "MalformedXML",
        format!("The XML you provided was not well-formed or did not validate: {why}"),
    )
}

/// One object version (or delete marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obj {
    pub key: String,
    pub version: String,
    pub marker: bool,
    pub seq: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Bucket {
    pub region: String,
    /// Another account's: every call answers AccessDenied.
    pub foreign: bool,
    pub class: String,
    pub acl: String,
    pub tags: BTreeMap<String, String>,
    /// `None`: versioning was never set; else `Enabled` / `Suspended`.
    pub versioning: Option<String>,
    pub sse: Option<String>,
    pub lifecycle: Option<El>,
    pub objects: Vec<Obj>,
    /// Incomplete multipart uploads: (key, upload id).
    pub uploads: Vec<(String, String)>,
}

impl Bucket {
    /// The current version of each key that is not a delete marker.
    pub fn live(&self) -> Vec<&Obj> {
        let mut latest: BTreeMap<&str, &Obj> = BTreeMap::new();
        for o in &self.objects {
            let e = latest.entry(&o.key).or_insert(o);
            if o.seq > e.seq {
                *e = o;
            }
        }
        latest.into_values().filter(|o| !o.marker).collect()
    }

    /// Versions and markers by key, newest first within a key.
    fn versions(&self) -> Vec<&Obj> {
        let mut v: Vec<&Obj> = self.objects.iter().collect();
        v.sort_by(|a, b| a.key.cmp(&b.key).then(b.seq.cmp(&a.seq)));
        v
    }
}

#[derive(Default)]
pub struct Store {
    pub buckets: BTreeMap<String, Bucket>,
    pub seq: u64,
}

/// What a request asks, read from method, sub-resource and host.
pub struct Op<'a> {
    pub method: &'a str,
    pub bucket: Option<&'a str>,
    /// The object a request names in its path (only AbortMultipartUpload
    /// among the operations the stand-in plays).
    pub key: Option<&'a str>,
    pub region: &'a str,
    pub query: &'a [(String, String)],
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Op<'_> {
    pub fn has(&self, sub: &str) -> bool {
        self.query.iter().any(|(k, _)| k == sub)
    }

    pub fn q(&self, k: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The name of the operation a request is (for faults and logs).
pub fn op_name(f: &Flavor, op: &Op<'_>) -> &'static str {
    let Some(_) = op.bucket else {
        return "ListBuckets";
    };
    let sub = |s: &str| op.has(s);
    if op.key.is_some() {
        return match op.method {
            "DELETE" if sub("uploadId") => "AbortMultipartUpload",
            _ => "Unknown",
        };
    }
    match op.method {
        "PUT" if sub("tagging") => "PutBucketTags",
        "PUT" if sub("versioning") => "PutBucketVersioning",
        "PUT" if sub("encryption") => "PutBucketEncryption",
        "PUT" if sub("lifecycle") => "PutBucketLifecycle",
        "PUT" if sub("acl") => "PutBucketAcl",
        "PUT" => "PutBucket",
        "GET" if sub("tagging") => "GetBucketTags",
        "GET" if sub("versioning") => "GetBucketVersioning",
        "GET" if sub("encryption") => "GetBucketEncryption",
        "GET" if sub("lifecycle") => "GetBucketLifecycle",
        "GET" if sub("acl") => "GetBucketAcl",
        "GET" if sub(f.info_query) => "GetBucketInfo",
        "GET" if sub("versions") => "ListObjectVersions",
        "GET" if sub("uploads") => "ListMultipartUploads",
        "GET" => "ListObjects",
        "DELETE" if sub("tagging") => "DeleteBucketTags",
        "DELETE" if sub("encryption") => "DeleteBucketEncryption",
        "DELETE" if sub("lifecycle") => "DeleteBucketLifecycle",
        "DELETE" => "DeleteBucket",
        "POST" if sub("delete") => "DeleteMultipleObjects",
        _ => "Unknown",
    }
}

impl Store {
    /// Performs `op`; the answer body (XML, or empty).
    pub fn dispatch(&mut self, f: &Flavor, op: &Op<'_>) -> Result<String, ApiError> {
        let Some(name) = op.bucket else {
            return self.list_buckets(f, op);
        };
        let name_op = op_name(f, op);
        if name_op == "PutBucket" {
            return self.put_bucket(f, op, name);
        }
        let b = match self.buckets.get_mut(name) {
            None => return Err(err(404, "NoSuchBucket", "The specified bucket does not exist.")),
            Some(b) if b.foreign => return Err(err(403, "AccessDenied", "You have no right to access this bucket.")),
            Some(b) if b.region != op.region => {
                return Err(err(403, "AccessDenied", "The bucket you are attempting to access must be addressed using the specified endpoint."))
            }
            Some(b) => b,
        };
        let body = || parse(op.body).map_err(malformed);
        match name_op {
            "GetBucketTags" => {
                if b.tags.is_empty() && !f.empty_tag_set {
                    return Err(err(404, f.no_tag_set_code, "The TagSet does not exist."));
                }
                let tags: String = b
                    .tags
                    .iter()
                    .map(|(k, v)| format!("<Tag>{}{}</Tag>", leaf("Key", k), leaf("Value", v)))
                    .collect();
                Ok(doc("Tagging", &format!("<TagSet>{tags}</TagSet>")))
            }
            "PutBucketTags" => {
                let t = body()?;
                if t.name != "Tagging" {
                    return Err(malformed("the root is not Tagging"));
                }
                let set = t.kid("TagSet").ok_or_else(|| malformed("no TagSet"))?;
                let mut tags = BTreeMap::new();
                for tag in set.kids("Tag") {
                    let k = tag.text_of("Key").unwrap_or_default();
                    if k.is_empty() || k.len() > 128 {
                        return Err(err(400, "InvalidTag", "A tag key is empty or too long."));
                    }
                    tags.insert(
                        k.to_string(),
                        tag.text_of("Value").unwrap_or_default().to_string(),
                    );
                }
                if tags.len() > f.max_tags {
                    return Err(err(
                        400,
                        "BadRequest",
                        format!("At most {} tags per bucket.", f.max_tags),
                    ));
                }
                b.tags = tags;
                Ok(String::new())
            }
            "DeleteBucketTags" => {
                b.tags.clear();
                Ok(String::new())
            }
            "GetBucketVersioning" => Ok(doc(
                "VersioningConfiguration",
                &b.versioning
                    .as_deref()
                    .map(|s| leaf("Status", s))
                    .unwrap_or_default(),
            )),
            "PutBucketVersioning" => {
                let v = body()?;
                match (v.name.as_str(), v.text_of("Status")) {
                    ("VersioningConfiguration", Some(s @ ("Enabled" | "Suspended"))) => {
                        b.versioning = Some(s.to_string());
                        Ok(String::new())
                    }
                    _ => Err(malformed("Status must be Enabled or Suspended")),
                }
            }
            "GetBucketEncryption" => match &b.sse {
                None => Err(err(
                    404,
                    f.no_sse_code,
                    "The server side encryption configuration was not found.",
                )),
                Some(a) => Ok(f.sse_xml(a)),
            },
            "PutBucketEncryption" => {
                let e = body()?;
                let rule = if f.sse_configuration {
                    (e.name == "ServerSideEncryptionConfiguration")
                        .then(|| e.kid("Rule"))
                        .flatten()
                } else {
                    (e.name == "ServerSideEncryptionRule").then_some(&e)
                };
                let alg = rule
                    .and_then(|r| r.kid("ApplyServerSideEncryptionByDefault"))
                    .and_then(|d| d.text_of("SSEAlgorithm"))
                    .ok_or_else(|| {
                        malformed("no ApplyServerSideEncryptionByDefault/SSEAlgorithm")
                    })?;
                if !f.sse_algorithms.contains(&alg) {
                    return Err(err(
                        400,
                        "InvalidArgument",
                        format!("SSEAlgorithm `{alg}` is not supported."),
                    ));
                }
                b.sse = Some(alg.to_string());
                Ok(String::new())
            }
            "DeleteBucketEncryption" => {
                b.sse = None;
                Ok(String::new())
            }
            "GetBucketLifecycle" => match &b.lifecycle {
                None => Err(err(
                    404,
                    f.no_lifecycle_code,
                    "No Row found in Lifecycle Table.",
                )),
                Some(l) => Ok(format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}",
                    write(l)
                )),
            },
            "PutBucketLifecycle" => {
                let l = body()?;
                check_lifecycle(f, &l)?;
                b.lifecycle = Some(l);
                Ok(String::new())
            }
            "DeleteBucketLifecycle" => {
                b.lifecycle = None;
                Ok(String::new())
            }
            "GetBucketAcl" => Ok((f.acl_xml)(&b.acl)),
            "PutBucketAcl" => {
                let acl = op
                    .header(&format!("{}acl", f.header_prefix))
                    .unwrap_or_default();
                if !["private", "public-read", "public-read-write"].contains(&acl) {
                    return Err(err(
                        400,
                        "InvalidArgument",
                        "no such bucket access control exists",
                    ));
                }
                b.acl = acl.to_string();
                Ok(String::new())
            }
            "GetBucketInfo" => Ok((f.info_xml)(name, b)),
            "ListObjects" => Ok(list_objects(name, b, op)),
            "ListObjectVersions" => Ok(list_versions(name, b, op)),
            "DeleteMultipleObjects" => {
                let want = op.header("content-md5").ok_or_else(|| {
                    err(
                        400,
                        "MissingArgument",
                        "Missing Some Required Arguments: Content-MD5",
                    )
                })?;
                if want != super::md5_b64(op.body) {
                    return Err(err(
                        400,
                        "InvalidDigest",
                        "The Content-MD5 you specified is not valid.",
                    ));
                }
                let d = body()?;
                let objs: Vec<&El> = d.kids("Object").collect();
                if d.name != "Delete" || objs.is_empty() || objs.len() > 1000 {
                    return Err(malformed("Delete needs 1 to 1000 Object elements"));
                }
                let quiet = d.text_of("Quiet") == Some("true");
                let mut deleted = String::new();
                for o in objs {
                    let key = o.text_of("Key").unwrap_or_default().to_string();
                    match o.text_of("VersionId") {
                        Some(v) => b.objects.retain(|x| !(x.key == key && x.version == v)),
                        None if b.versioning.as_deref() == Some("Enabled") => {
                            self.seq += 1;
                            b.objects.push(Obj {
                                key: key.clone(),
                                version: format!("v{}", self.seq),
                                marker: true,
                                seq: self.seq,
                            });
                        }
                        None => b.objects.retain(|x| x.key != key),
                    }
                    deleted.push_str(&format!("<Deleted>{}</Deleted>", leaf("Key", &key)));
                }
                Ok(doc("DeleteResult", if quiet { "" } else { &deleted }))
            }
            "ListMultipartUploads" => Ok(list_uploads(name, b, op)),
            "AbortMultipartUpload" => {
                let (key, id) = (op.key.unwrap_or_default(), op.q("uploadId").unwrap_or(""));
                let before = b.uploads.len();
                b.uploads.retain(|(k, u)| !(k == key && u == id));
                if b.uploads.len() == before {
                    return Err(err(
                        404,
                        "NoSuchUpload",
                        "The specified upload does not exist.",
                    ));
                }
                Ok(String::new())
            }
            "DeleteBucket" => {
                if !b.objects.is_empty() || !b.uploads.is_empty() {
                    return Err(err(
                        409,
                        "BucketNotEmpty",
                        "The bucket you tried to delete is not empty.",
                    ));
                }
                self.buckets.remove(name);
                Ok(String::new())
            }
            _ => Err(err(
                400,
                "InvalidRequest",
                format!("{} {name}: not an operation this stand-in knows", op.method),
            )),
        }
    }

    fn put_bucket(&mut self, f: &Flavor, op: &Op<'_>, name: &str) -> Result<String, ApiError> {
        if !(f.valid_name)(name) {
            return Err(err(
                400,
                "InvalidBucketName",
                "The specified bucket is not valid.",
            ));
        }
        let acl = op
            .header(&format!("{}acl", f.header_prefix))
            .unwrap_or("private")
            .to_string();
        if let Some(b) = self.buckets.get_mut(name) {
            if b.foreign {
                return Err(err(409, "BucketAlreadyExists", "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."));
            }
            if !f.owned_put_rewrites {
                return Err(err(409, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it."));
            }
            // OSS: a second PutBucket of one's own bucket rewrites its metadata.
            b.acl = acl;
            return Ok(String::new());
        }
        // A `Location` (OBS) must name the region of the endpoint it was sent to.
        if !op.body.is_empty() {
            let c = parse(op.body).map_err(malformed)?;
            if c.name != "CreateBucketConfiguration" {
                return Err(malformed("the root is not CreateBucketConfiguration"));
            }
            if let Some(l) = c.text_of("Location") {
                if l != (f.location)(op.region) {
                    return Err(err(
                        400,
                        "InvalidLocationConstraint",
                        format!("The location `{l}` is not the endpoint's region."),
                    ));
                }
            }
        }
        let class = match f.class_header {
            Some(h) => op.header(h).map(str::to_string),
            None if op.body.is_empty() => None,
            None => {
                let c = parse(op.body).map_err(malformed)?;
                if c.name != "CreateBucketConfiguration" {
                    return Err(malformed("the root is not CreateBucketConfiguration"));
                }
                c.text_of("StorageClass").map(str::to_string)
            }
        }
        .unwrap_or_else(|| f.classes[0].to_string());
        if !f.classes.contains(&class.as_str()) {
            return Err(err(
                400,
                "InvalidArgument",
                format!("Unsupported storage class `{class}`."),
            ));
        }
        if self.buckets.values().filter(|b| !b.foreign).count() >= 100 {
            return Err(err(
                400,
                "TooManyBuckets",
                "You have attempted to create more buckets than allowed.",
            ));
        }
        self.buckets.insert(
            name.to_string(),
            Bucket {
                region: op.region.to_string(),
                class,
                acl,
                ..Bucket::default()
            },
        );
        Ok(String::new())
    }

    fn list_buckets(&self, f: &Flavor, op: &Op<'_>) -> Result<String, ApiError> {
        if op.method != "GET" {
            return Err(err(
                405,
                "MethodNotAllowed",
                "The specified method is not allowed against this resource.",
            ));
        }
        let max: usize = op
            .q("max-keys")
            .and_then(|m| m.parse().ok())
            .unwrap_or(100)
            .clamp(1, 1000);
        let marker = op.q("marker").unwrap_or("");
        let mine: Vec<(&String, &Bucket)> = self
            .buckets
            .iter()
            .filter(|(n, b)| !b.foreign && n.as_str() > marker)
            .collect();
        let page = &mine[..mine.len().min(max)];
        let mut inner = String::from(
            "<Owner><ID>1234567890</ID><DisplayName>1234567890</DisplayName></Owner><Buckets>",
        );
        for (n, b) in page {
            inner.push_str(&format!(
                "<Bucket>{}{}{}{}{}</Bucket>",
                leaf("CreationDate", "2026-11-29T00:00:00.000Z"),
                leaf("Location", &(f.location)(&b.region)),
                leaf("Name", n),
                leaf("Region", &b.region),
                leaf("StorageClass", &b.class),
            ));
        }
        inner.push_str("</Buckets>");
        if mine.len() > page.len() {
            let last = page.last().map(|(n, _)| n.as_str()).unwrap_or_default();
            inner.push_str(&format!(
                "<IsTruncated>true</IsTruncated>{}",
                leaf("NextMarker", last)
            ));
        }
        Ok(doc("ListAllMyBucketsResult", &inner))
    }
}

fn check_lifecycle(f: &Flavor, l: &El) -> Result<(), ApiError> {
    if l.name != "LifecycleConfiguration" || l.kids("Rule").next().is_none() {
        return Err(malformed("LifecycleConfiguration needs at least one Rule"));
    }
    let days = |e: &El, n: &str| -> Result<(), ApiError> {
        match e.text_of(n).map(|d| d.parse::<u32>()) {
            Some(Ok(d)) if d > 0 => Ok(()),
            _ => Err(malformed(format!("{} needs a positive {n}", e.name))),
        }
    };
    for r in l.kids("Rule") {
        if !matches!(r.text_of("Status"), Some("Enabled" | "Disabled")) {
            return Err(malformed("Status must be Enabled or Disabled"));
        }
        if r.kid("Prefix").is_none() && r.kid("Filter").is_none() {
            return Err(malformed("a Rule needs a Prefix (or a Filter)"));
        }
        for t in r.kids("Transition") {
            days(t, "Days")?;
            let c = t.text_of("StorageClass").unwrap_or_default();
            if !f.classes[1..].contains(&c) {
                return Err(err(
                    400,
                    "InvalidArgument",
                    format!("Transition StorageClass `{c}` is not supported."),
                ));
            }
        }
        if let Some(n) = r.kid("NoncurrentVersionExpiration") {
            days(n, "NoncurrentDays")?;
        }
        if r.kids.iter().all(|k| {
            !["Transition", "NoncurrentVersionExpiration", "Expiration"].contains(&k.name.as_str())
        }) {
            return Err(malformed("a Rule needs an action"));
        }
    }
    Ok(())
}

/// An element back as XML text.
fn write(e: &El) -> String {
    let inner: String = if e.kids.is_empty() {
        esc(&e.text)
    } else {
        e.kids.iter().map(write).collect()
    };
    format!("<{0}>{inner}</{0}>", e.name)
}

fn max_keys(op: &Op<'_>) -> usize {
    op.q("max-keys")
        .and_then(|m| m.parse().ok())
        .unwrap_or(100)
        .clamp(1, 1000)
}

fn list_objects(name: &str, b: &Bucket, op: &Op<'_>) -> String {
    let marker = op.q("marker").unwrap_or("");
    let live: Vec<&Obj> = b
        .live()
        .into_iter()
        .filter(|o| o.key.as_str() > marker)
        .collect();
    let max = max_keys(op);
    let page = &live[..live.len().min(max)];
    let mut inner = format!(
        "{}{}{}",
        leaf("Name", name),
        leaf("Marker", marker),
        leaf("MaxKeys", &max.to_string())
    );
    let truncated = live.len() > page.len();
    inner.push_str(&leaf(
        "IsTruncated",
        if truncated { "true" } else { "false" },
    ));
    if truncated {
        inner.push_str(&leaf(
            "NextMarker",
            &page.last().map(|o| o.key.clone()).unwrap_or_default(),
        ));
    }
    for o in page {
        inner.push_str(&format!(
            "<Contents>{}{}{}</Contents>",
            leaf("Key", &o.key),
            leaf("Size", "1"),
            leaf("StorageClass", &b.class)
        ));
    }
    doc("ListBucketResult", &inner)
}

/// ListMultipartUploads (`GET /?uploads`): by key then upload id, after
/// `key-marker` / `upload-id-marker`, `max-uploads` a page.
fn list_uploads(name: &str, b: &Bucket, op: &Op<'_>) -> String {
    let km = op.q("key-marker").unwrap_or("");
    let um = op.q("upload-id-marker").unwrap_or("");
    let mut all: Vec<&(String, String)> = b
        .uploads
        .iter()
        .filter(|(k, u)| (k.as_str(), u.as_str()) > (km, um))
        .collect();
    all.sort();
    let max = op
        .q("max-uploads")
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000usize)
        .clamp(1, 1000);
    let page = &all[..all.len().min(max)];
    let truncated = all.len() > page.len();
    let mut inner = [
        leaf("Bucket", name),
        leaf("KeyMarker", km),
        leaf("UploadIdMarker", um),
        leaf("MaxUploads", &max.to_string()),
        leaf("IsTruncated", if truncated { "true" } else { "false" }),
    ]
    .concat();
    if let (true, Some((k, u))) = (truncated, page.last()) {
        inner.push_str(&leaf("NextKeyMarker", k));
        inner.push_str(&leaf("NextUploadIdMarker", u));
    }
    for (k, u) in page {
        inner.push_str(&format!(
            "<Upload>{}{}</Upload>",
            leaf("Key", k),
            leaf("UploadId", u)
        ));
    }
    doc("ListMultipartUploadsResult", &inner)
}

fn list_versions(name: &str, b: &Bucket, op: &Op<'_>) -> String {
    let all = b.versions();
    let km = op.q("key-marker").unwrap_or("");
    let vm = op.q("version-id-marker").unwrap_or("");
    let start = if km.is_empty() {
        0
    } else if vm.is_empty() {
        all.iter()
            .position(|o| o.key.as_str() > km)
            .unwrap_or(all.len())
    } else {
        all.iter()
            .position(|o| o.key == km && o.version == vm)
            .map(|i| i + 1)
            .unwrap_or_else(|| {
                all.iter()
                    .position(|o| o.key.as_str() > km)
                    .unwrap_or(all.len())
            })
    };
    let rest = &all[start..];
    let max = max_keys(op);
    let page = &rest[..rest.len().min(max)];
    let mut inner = format!(
        "{}{}{}",
        leaf("Name", name),
        leaf("KeyMarker", km),
        leaf("VersionIdMarker", vm)
    );
    let truncated = rest.len() > page.len();
    inner.push_str(&leaf(
        "IsTruncated",
        if truncated { "true" } else { "false" },
    ));
    if let (true, Some(last)) = (truncated, page.last()) {
        inner.push_str(&leaf("NextKeyMarker", &last.key));
        inner.push_str(&leaf("NextVersionIdMarker", &last.version));
    }
    let latest: BTreeMap<&str, u64> = b.objects.iter().fold(BTreeMap::new(), |mut m, o| {
        let e = m.entry(o.key.as_str()).or_insert(0);
        *e = (*e).max(o.seq);
        m
    });
    for o in page {
        let el = if o.marker { "DeleteMarker" } else { "Version" };
        let is_latest = latest.get(o.key.as_str()) == Some(&o.seq);
        inner.push_str(&format!(
            "<{el}>{}{}{}</{el}>",
            leaf("Key", &o.key),
            leaf("VersionId", &o.version),
            leaf("IsLatest", if is_latest { "true" } else { "false" })
        ));
    }
    doc("ListVersionsResult", &inner)
}
