//! The actions, one function each, with the API reference page it follows.
//! Pages: https://www.tencentcloud.com/document/api/<product>/<page>
//! (213 = CVM, 215 = VPC, 362 = CBS). Error codes are the ones those pages
//! (or the API 3.0 common error codes page, 213/15694) list.

use super::state::{
    iso, now_iso, tags_json, Disk, Instance, PlacementGroup, SecurityGroup, State, Subnet, Tags,
    Vpc, DATA_DISK, IMAGES, SYSTEM_DISK,
};
use super::ApiError;
use serde_json::{json, Map, Value};
use std::net::Ipv4Addr;

type R = Result<Value, ApiError>;

pub(crate) fn dispatch(st: &mut State, service: &str, action: &str, region: &str, p: &Value) -> R {
    let answer = route(st, service, action, region, p)?;
    match st.faults.strip_after {
        Some(0) => {
            st.faults.strip_after = None;
            // Injected: a 200 whose documented fields are missing (only the
            // RequestId the envelope adds is left).
            return Ok(json!({}));
        }
        Some(n) => st.faults.strip_after = Some(n - 1),
        None => {}
    }
    Ok(answer)
}

fn route(st: &mut State, service: &str, action: &str, region: &str, p: &Value) -> R {
    match (service, action) {
        ("vpc", "CreateVpc") => create_vpc(st, region, p),
        ("vpc", "DescribeVpcs") => describe_vpcs(st, region, p),
        ("vpc", "DeleteVpc") => delete_vpc(st, region, p),
        ("vpc", "CreateSubnet") => create_subnet(st, region, p),
        ("vpc", "DescribeSubnets") => describe_subnets(st, region, p),
        ("vpc", "DeleteSubnet") => delete_subnet(st, region, p),
        ("vpc", "CreateSecurityGroup") => create_security_group(st, region, p),
        ("vpc", "CreateSecurityGroupPolicies") => create_security_group_policies(st, region, p),
        ("vpc", "ModifySecurityGroupPolicies") => modify_security_group_policies(st, region, p),
        ("vpc", "DescribeSecurityGroups") => describe_security_groups(st, region, p),
        ("vpc", "DescribeSecurityGroupPolicies") => describe_security_group_policies(st, region, p),
        ("vpc", "DeleteSecurityGroup") => delete_security_group(st, region, p),
        ("cvm", "DescribeImages") => describe_images(st, p),
        ("cvm", "CreateDisasterRecoverGroup") => create_disaster_recover_group(st, region, p),
        ("cvm", "DescribeDisasterRecoverGroups") => describe_disaster_recover_groups(st, region, p),
        ("cvm", "DeleteDisasterRecoverGroups") => delete_disaster_recover_groups(st, region, p),
        ("cvm", "RunInstances") => run_instances(st, region, p),
        ("cvm", "InquiryPriceRunInstances") => inquiry_price_run_instances(st, region, p),
        ("cvm", "DescribeRegions") => describe_regions(st),
        ("cvm", "DescribeZones") => describe_zones(st, region),
        ("cvm", "DescribeZoneInstanceConfigInfos") => {
            describe_zone_instance_config_infos(st, region, p)
        }
        ("cvm", "DescribeInstances") => describe_instances(st, region, p),
        ("cvm", "DescribeAccountQuota") => describe_account_quota(st, region, p),
        ("cvm", "TerminateInstances") => terminate_instances(st, region, p),
        ("cbs", "CreateDisks") => create_disks(st, region, p),
        ("cbs", "DescribeDisks") => describe_disks(st, region, p),
        ("cbs", "AttachDisks") => attach_disks(st, region, p),
        ("cbs", "DetachDisks") => detach_disks(st, region, p),
        ("cbs", "TerminateDisks") => terminate_disks(st, region, p),
        ("cbs", "ResizeDisk") => resize_disk(st, region, p),
        ("sts", "GetCallerIdentity") => super::tagging::get_caller_identity(),
        ("tag", "TagResources") => super::tagging::tag_resources(st, p),
        _ => Err(ApiError::new(
            "InvalidAction",
            format!("The action `{action}` of service `{service}` does not exist (or this stand-in does not implement it)."),
        )),
    }
}

// ---------------------------------------------------------------- parameters

pub(crate) fn missing(key: &str) -> ApiError {
    ApiError::new(
        "MissingParameter",
        format!("The request is missing a required parameter `{key}`."),
    )
}

pub(crate) fn bad(key: &str, why: &str) -> ApiError {
    ApiError::new(
        "InvalidParameterValue",
        format!("The value of parameter `{key}` is invalid: {why}."),
    )
}

fn opt_str<'a>(p: &'a Value, key: &str) -> Option<&'a str> {
    p.get(key).and_then(Value::as_str)
}

fn req_str<'a>(p: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    opt_str(p, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| missing(key))
}

/// An integer parameter, given as a number or (VPC's Offset/Limit are
/// documented as String) a numeric string.
fn opt_int(p: &Value, key: &str) -> Result<Option<u64>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad(key, "not a non-negative integer")),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| bad(key, "not a non-negative integer")),
        Some(_) => Err(bad(key, "not an integer")),
    }
}

fn str_list(p: &Value, key: &str) -> Result<Vec<String>, ApiError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(key, "not a list of strings"))
            })
            .collect(),
        Some(_) => Err(bad(key, "not a list")),
    }
}

/// `Tags.N` / `TagSpecification.N.Tags`: `[{Key, Value}]`.
pub(crate) fn parse_tags(v: Option<&Value>, key: &str) -> Result<Tags, ApiError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or_else(|| bad(key, "not a list of {Key, Value}"))?;
    let mut out: Tags = Vec::new();
    for t in list {
        let k = t
            .get("Key")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(key, "a tag has no Key"))?;
        let val = t.get("Value").and_then(Value::as_str).unwrap_or("");
        check_tag_text(k, 127, key, "key")?;
        check_tag_text(val, 255, key, "value")?;
        // Reserved prefixes: `qcs:` and `project:` (651/13354), `qcloud`,
        // `tencent` and `project` (CreateTag's error table, 651/33015).
        let lower = k.to_ascii_lowercase();
        if ["qcloud", "tencent", "project", "qcs:"]
            .iter()
            .any(|p| lower.starts_with(p))
        {
            return Err(ApiError::new(
                "FailedOperation.TagKeyReserved",
                format!("The tag key `{k}` is reserved."),
            ));
        }
        if out.iter().any(|(ek, _)| ek == k) {
            return Err(ApiError::new(
                "InvalidParameterValue.DuplicateTags",
                format!("The tag key `{k}` is repeated."),
            ));
        }
        out.push((k.to_string(), val.to_string()));
    }
    if out.len() > 50 {
        return Err(ApiError::new(
            "LimitExceeded.TagResourceQuota",
            "At most 50 tags per resource.",
        ));
    }
    Ok(out)
}

/// Tag naming rules, https://www.tencentcloud.com/document/product/651/13354
/// ("Use Limits"): keys 1-127 and values 1-255 Unicode characters; letters
/// (any script), digits, spaces (not first or last) and `+ - = . _ : / @ ( )
/// [ ] , ; > <` (in Chinese input also `【 】 ： （ ）`).
fn check_tag_text(text: &str, max: usize, key: &str, what: &str) -> Result<(), ApiError> {
    let n = text.chars().count();
    let allowed =
        |c: char| c.is_alphanumeric() || c == ' ' || "+-=._:/@()[],;><【】：（）".contains(c);
    if n == 0 || n > max {
        return Err(bad(
            key,
            &format!("a tag {what} must be 1 to {max} characters"),
        ));
    }
    if text.starts_with(' ') || text.ends_with(' ') {
        return Err(bad(
            key,
            &format!("a tag {what} cannot start or end with a space"),
        ));
    }
    if let Some(c) = text.chars().find(|c| !allowed(*c)) {
        return Err(bad(
            key,
            &format!("the tag {what} `{text}` has the character `{c}`, which tags do not allow"),
        ));
    }
    Ok(())
}

/// `TagSpecification.N`: `[{ResourceType, Tags}]`, only `resource_type` entries apply.
fn spec_tags(p: &Value, resource_type: &str) -> Result<Tags, ApiError> {
    let mut out = Vec::new();
    for spec in p
        .get("TagSpecification")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let rt = spec
            .get("ResourceType")
            .and_then(Value::as_str)
            .unwrap_or("");
        if rt != resource_type {
            return Err(bad(
                "TagSpecification.ResourceType",
                &format!("expected `{resource_type}`, got `{rt}`"),
            ));
        }
        out.extend(parse_tags(spec.get("Tags"), "TagSpecification.Tags")?);
    }
    Ok(out)
}

fn parse_cidr(c: &str) -> Option<(u32, u8)> {
    let (ip, len) = c.split_once('/')?;
    let ip: Ipv4Addr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    if len > 32 {
        return None;
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let n = u32::from(ip);
    (n & mask == n).then_some((n, len))
}

fn cidr_contains(outer: (u32, u8), inner: (u32, u8)) -> bool {
    let mask = if outer.1 == 0 {
        0
    } else {
        u32::MAX << (32 - outer.1)
    };
    inner.1 >= outer.1 && inner.0 & mask == outer.0
}

fn cidr_overlaps(a: (u32, u8), b: (u32, u8)) -> bool {
    cidr_contains(a, b) || cidr_contains(b, a)
}

/// Zones are named `{region}-{n}`.
fn check_zone(region: &str, zone: &str) -> Result<(), ApiError> {
    match zone.strip_prefix(region).and_then(|r| r.strip_prefix('-')) {
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(ApiError::new(
            "InvalidZone.MismatchRegion",
            format!("The zone `{zone}` does not exist in region `{region}`."),
        )),
    }
}

// ---------------------------------------------------------------- filters and pages

/// What a Describe call filters on: a resource's named fields and its tags.
struct Filterable<'a> {
    fields: Vec<(&'static str, String)>,
    tags: &'a Tags,
}

/// `Filters.N`: `[{Name, Values}]`; values of one filter are ORed, filters
/// are ANDed; `tag-key` and `tag:<key>` match tags; `*-name` is fuzzy.
fn matches(
    f: &Filterable<'_>,
    filters: &[(String, Vec<String>)],
    known: &[&str],
) -> Result<bool, ApiError> {
    for (name, values) in filters {
        let ok = if name == "tag-key" {
            f.tags.iter().any(|(k, _)| values.contains(k))
        } else if name == "tag-value" {
            f.tags.iter().any(|(_, v)| values.contains(v))
        } else if let Some(key) = name.strip_prefix("tag:") {
            f.tags.iter().any(|(k, v)| k == key && values.contains(v))
        } else if known.contains(&name.as_str()) {
            let field = f
                .fields
                .iter()
                .find(|(n, _)| *n == name.as_str())
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            if name.ends_with("-name") {
                values.iter().any(|v| field.contains(v.as_str()))
            } else {
                values.iter().any(|v| v == field)
            }
        } else {
            return Err(ApiError::new(
                "InvalidFilter",
                format!("The filter `{name}` is not supported by this action."),
            ));
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn parse_filters(p: &Value) -> Result<Vec<(String, Vec<String>)>, ApiError> {
    let mut out = Vec::new();
    for f in p
        .get("Filters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = f
            .get("Name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("Filters.Name", "missing"))?;
        let values = str_list(f, "Values")?;
        if values.is_empty() {
            return Err(bad("Filters.Values", "empty"));
        }
        out.push((name.to_string(), values));
    }
    Ok(out)
}

/// Common rules of the Describe calls: ids and Filters are exclusive, at most
/// 100 ids, Limit 1-100 (default 20), Offset ≥ 0.
struct Query {
    ids: Vec<String>,
    filters: Vec<(String, Vec<String>)>,
    offset: usize,
    limit: usize,
}

fn query(p: &Value, ids_key: &str, max_filter_values: usize) -> Result<Query, ApiError> {
    let ids = str_list(p, ids_key)?;
    let filters = parse_filters(p)?;
    if !ids.is_empty() && !filters.is_empty() {
        return Err(ApiError::new(
            "InvalidParameterCombination",
            format!("`{ids_key}` and `Filters` cannot be specified at the same time."),
        ));
    }
    if ids.len() > 100 {
        return Err(ApiError::new(
            "InvalidParameterValue.LimitExceeded",
            format!("At most 100 `{ids_key}` per request."),
        ));
    }
    if filters.len() > 10 || filters.iter().any(|(_, v)| v.len() > max_filter_values) {
        return Err(ApiError::new(
            "InvalidParameterValue.LimitExceeded",
            format!("At most 10 Filters with {max_filter_values} Values each."),
        ));
    }
    let limit = opt_int(p, "Limit")?.unwrap_or(20) as usize;
    if !(1..=100).contains(&limit) {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            "`Limit` must be between 1 and 100.",
        ));
    }
    let offset = opt_int(p, "Offset")?.unwrap_or(0) as usize;
    Ok(Query {
        ids,
        filters,
        offset,
        limit,
    })
}

fn page(q: &Query, items: Vec<Value>, set_key: &str) -> R {
    let total = items.len();
    let page: Vec<Value> = items.into_iter().skip(q.offset).take(q.limit).collect();
    let mut m = Map::new();
    m.insert("TotalCount".into(), json!(total));
    m.insert(set_key.into(), Value::Array(page));
    Ok(Value::Object(m))
}

fn check_id(id: &str, prefix: &str, code: &str) -> Result<(), ApiError> {
    let ok = id
        .strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|r| {
            r.len() == 8
                && r.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            code,
            format!("The id `{id}` is malformed (expected {prefix}-xxxxxxxx)."),
        ))
    }
}

/// ClientToken: at most 64 ASCII characters; a repeated token returns the first answer.
fn client_token(p: &Value) -> Result<Option<String>, ApiError> {
    match opt_str(p, "ClientToken").filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if t.len() > 64 || !t.is_ascii() => Err(ApiError::new(
            "InvalidClientToken.TooLong",
            "The ClientToken must be at most 64 ASCII characters.",
        )),
        Some(t) => Ok(Some(t.to_string())),
    }
}

// ---------------------------------------------------------------- VPC (215)

fn vpc_json(v: &Vpc) -> Value {
    json!({
        "VpcId": v.id, "VpcName": v.name, "CidrBlock": v.cidr, "IsDefault": false,
        "EnableMulticast": false, "DhcpOptionsId": "", "DnsServerSet": [], "DomainName": "",
        "CreatedTime": v.created, "TagSet": tags_json(&v.tags),
    })
}

/// CreateVpc, https://www.tencentcloud.com/document/api/215/15774: VpcName,
/// CidrBlock (within 10.0.0.0/12, 172.16.0.0/12 or 192.168.0.0/16, prefix
/// 12-28), Tags. No ClientToken. Default quota: 20 VPCs per region.
fn create_vpc(st: &mut State, region: &str, p: &Value) -> R {
    let name = req_str(p, "VpcName")?;
    let cidr = req_str(p, "CidrBlock")?;
    let parsed = parse_cidr(cidr).ok_or_else(|| {
        ApiError::new(
            "InvalidParameterValue.Malformed",
            format!("`{cidr}` is not a CIDR block."),
        )
    })?;
    let private = [
        parse_cidr("10.0.0.0/8"),
        parse_cidr("172.16.0.0/12"),
        parse_cidr("192.168.0.0/16"),
    ];
    if !(12..=28).contains(&parsed.1)
        || !private.iter().flatten().any(|r| cidr_contains(*r, parsed))
    {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            format!("`{cidr}`: a VPC CIDR must be a private block with a prefix of 12 to 28."),
        ));
    }
    if name.chars().count() > 60 {
        return Err(bad("VpcName", "longer than 60 characters"));
    }
    let tags = parse_tags(p.get("Tags"), "Tags")?;
    if st.vpcs.values().filter(|v| v.region == region).count() >= 20 {
        return Err(ApiError::new(
            "LimitExceeded",
            "The VPC quota of this region (20) is used up.",
        ));
    }
    let id = st.new_id("vpc");
    let vpc = Vpc {
        id: id.clone(),
        region: region.into(),
        name: name.into(),
        cidr: cidr.into(),
        tags,
        created: now_iso(),
    };
    let out = json!({ "Vpc": vpc_json(&vpc) });
    st.vpcs.insert(id, vpc);
    Ok(out)
}

/// DescribeVpcs, https://www.tencentcloud.com/document/api/215/15778: VpcIds
/// or Filters (vpc-name, vpc-id, cidr-block, tag-key, tag:tag-key), Offset
/// and Limit (documented as String). Unknown ids are left out.
fn describe_vpcs(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "VpcIds", 100)?;
    let mut items = Vec::new();
    for v in st.vpcs.values().filter(|v| v.region == region) {
        if !q.ids.is_empty() && !q.ids.contains(&v.id) {
            continue;
        }
        let f = Filterable {
            fields: vec![
                ("vpc-name", v.name.clone()),
                ("vpc-id", v.id.clone()),
                ("cidr-block", v.cidr.clone()),
            ],
            tags: &v.tags,
        };
        if matches(&f, &q.filters, &["vpc-name", "vpc-id", "cidr-block"])? {
            items.push(vpc_json(v));
        }
    }
    page(&q, items, "VpcSet")
}

/// DeleteVpc, https://www.tencentcloud.com/document/api/215/15775: the VPC
/// must hold no resources ("Before deleting a VPC, ensure that the VPC
/// contains no resources"): subnets refuse it with ResourceInUse.
fn delete_vpc(st: &mut State, region: &str, p: &Value) -> R {
    let id = req_str(p, "VpcId")?;
    check_id(id, "vpc", "InvalidParameterValue.Malformed")?;
    if st.vpcs.get(id).is_none_or(|v| v.region != region) {
        return Err(ApiError::new(
            "ResourceNotFound",
            format!("The VPC `{id}` does not exist."),
        ));
    }
    let subnets: Vec<&str> = st
        .subnets
        .values()
        .filter(|s| s.vpc == id)
        .map(|s| s.id.as_str())
        .collect();
    if !subnets.is_empty() {
        return Err(ApiError::new(
            "ResourceInUse",
            format!(
                "The VPC `{id}` still contains subnets ({}).",
                subnets.join(", ")
            ),
        ));
    }
    st.vpcs.remove(id);
    Ok(json!({}))
}

fn subnet_json(st: &State, s: &Subnet) -> Value {
    let used = st.instances.values().filter(|i| i.subnet == s.id).count() as u64;
    let size = parse_cidr(&s.cidr)
        .map(|(_, l)| 1u64 << (32 - l))
        .unwrap_or(0);
    json!({
        "VpcId": s.vpc, "SubnetId": s.id, "SubnetName": s.name, "CidrBlock": s.cidr, "Zone": s.zone,
        "IsDefault": false, "EnableBroadcast": false, "RouteTableId": "",
        "AvailableIpAddressCount": size.saturating_sub(3 + used), "TotalIpAddressCount": size,
        "CreatedTime": s.created, "TagSet": tags_json(&s.tags),
    })
}

/// CreateSubnet, https://www.tencentcloud.com/document/api/215/15782: VpcId,
/// SubnetName, CidrBlock (inside the VPC's, not overlapping its other
/// subnets), Zone, Tags. No ClientToken.
fn create_subnet(st: &mut State, region: &str, p: &Value) -> R {
    let vpc_id = req_str(p, "VpcId")?;
    let name = req_str(p, "SubnetName")?;
    let cidr = req_str(p, "CidrBlock")?;
    let zone = req_str(p, "Zone")?;
    check_zone(region, zone)?;
    let vpc = st
        .vpcs
        .get(vpc_id)
        .filter(|v| v.region == region)
        .ok_or_else(|| {
            ApiError::new(
                "ResourceNotFound",
                format!("The VPC `{vpc_id}` does not exist."),
            )
        })?;
    let parsed = parse_cidr(cidr).ok_or_else(|| {
        ApiError::new(
            "InvalidParameterValue.Malformed",
            format!("`{cidr}` is not a CIDR block."),
        )
    })?;
    let vpc_cidr = parse_cidr(&vpc.cidr).unwrap_or((0, 0));
    if !cidr_contains(vpc_cidr, parsed) || parsed.1 > 28 {
        return Err(ApiError::new(
            "InvalidParameterValue.SubnetRange",
            format!(
                "The subnet `{cidr}` is not inside the VPC's `{}` (or is smaller than /28).",
                vpc.cidr
            ),
        ));
    }
    if let Some(other) = st
        .subnets
        .values()
        .find(|s| s.vpc == vpc_id && parse_cidr(&s.cidr).is_some_and(|c| cidr_overlaps(c, parsed)))
    {
        return Err(ApiError::new(
            "InvalidParameterValue.SubnetConflict",
            format!(
                "The subnet `{cidr}` overlaps `{}` ({}).",
                other.cidr, other.id
            ),
        ));
    }
    let tags = parse_tags(p.get("Tags"), "Tags")?;
    let id = st.new_id("subnet");
    let s = Subnet {
        id: id.clone(),
        region: region.into(),
        vpc: vpc_id.into(),
        name: name.into(),
        cidr: cidr.into(),
        zone: zone.into(),
        tags,
        created: now_iso(),
    };
    let out = json!({ "Subnet": subnet_json(st, &s) });
    st.subnets.insert(id, s);
    Ok(out)
}

/// DescribeSubnets, https://www.tencentcloud.com/document/api/215/15784:
/// SubnetIds or Filters (subnet-id, vpc-id, cidr-block, subnet-name, zone,
/// tag-key, tag:tag-key), Offset/Limit as String.
fn describe_subnets(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "SubnetIds", 100)?;
    let mut items = Vec::new();
    for s in st.subnets.values().filter(|s| s.region == region) {
        if !q.ids.is_empty() && !q.ids.contains(&s.id) {
            continue;
        }
        let f = Filterable {
            fields: vec![
                ("subnet-id", s.id.clone()),
                ("vpc-id", s.vpc.clone()),
                ("cidr-block", s.cidr.clone()),
                ("subnet-name", s.name.clone()),
                ("zone", s.zone.clone()),
            ],
            tags: &s.tags,
        };
        if matches(
            &f,
            &q.filters,
            &["subnet-id", "vpc-id", "cidr-block", "subnet-name", "zone"],
        )? {
            items.push(subnet_json(st, s));
        }
    }
    page(&q, items, "SubnetSet")
}

/// DeleteSubnet, https://www.tencentcloud.com/document/api/215/15783:
/// "Remove all resources in the subnet before deleting it".
fn delete_subnet(st: &mut State, region: &str, p: &Value) -> R {
    let id = req_str(p, "SubnetId")?;
    check_id(id, "subnet", "InvalidParameterValue.Malformed")?;
    if st.subnets.get(id).is_none_or(|s| s.region != region) {
        return Err(ApiError::new(
            "ResourceNotFound",
            format!("The subnet `{id}` does not exist."),
        ));
    }
    // Instances in the recycle bin (SHUTDOWN) keep their subnet (213/4931).
    if let Some(i) = st.instances.values().find(|i| i.subnet == id) {
        return Err(ApiError::new(
            "ResourceInUse",
            format!(
                "The subnet `{id}` is used by instance `{}` ({}).",
                i.id, i.state
            ),
        ));
    }
    st.subnets.remove(id);
    Ok(json!({}))
}

fn sg_json(g: &SecurityGroup) -> Value {
    json!({
        "SecurityGroupId": g.id, "SecurityGroupName": g.name, "SecurityGroupDesc": g.desc,
        "ProjectId": "0", "IsDefault": false, "CreatedTime": g.created, "TagSet": tags_json(&g.tags),
    })
}

/// CreateSecurityGroup, https://www.tencentcloud.com/document/api/215/15806:
/// GroupName, GroupDescription, ProjectId, Tags. New groups deny all traffic
/// until policies are added.
fn create_security_group(st: &mut State, region: &str, p: &Value) -> R {
    let name = req_str(p, "GroupName")?;
    let desc = req_str(p, "GroupDescription")?;
    if name.chars().count() > 60 || desc.chars().count() > 100 {
        return Err(bad(
            "GroupName",
            "names are at most 60 and descriptions 100 characters",
        ));
    }
    let tags = parse_tags(p.get("Tags"), "Tags")?;
    let id = st.new_id("sg");
    let g = SecurityGroup {
        id: id.clone(),
        region: region.into(),
        name: name.into(),
        desc: desc.into(),
        tags,
        ingress: Vec::new(),
        egress: Vec::new(),
        version: 0,
        created: now_iso(),
    };
    let out = json!({ "SecurityGroup": sg_json(&g) });
    st.sgs.insert(id, g);
    Ok(out)
}

/// A policy of SecurityGroupPolicySet: Protocol TCP/UDP/ICMP/ICMPV6/GRE/ALL;
/// Port only with TCP or UDP (`80`, `8000-8010` or `ALL`); exactly one of
/// CidrBlock / SecurityGroupId (an existing group); Action ACCEPT or DROP.
fn check_policy(st: &State, region: &str, pol: &Value) -> Result<Value, ApiError> {
    let proto = opt_str(pol, "Protocol")
        .unwrap_or("ALL")
        .to_ascii_uppercase();
    if !["TCP", "UDP", "ICMP", "ICMPV6", "GRE", "ALL"].contains(&proto.as_str()) {
        return Err(bad(
            "SecurityGroupPolicySet.Protocol",
            &format!("`{proto}` is not one of TCP, UDP, ICMP, ICMPV6, GRE, ALL"),
        ));
    }
    if let Some(port) = opt_str(pol, "Port") {
        if proto != "TCP" && proto != "UDP" {
            return Err(bad(
                "SecurityGroupPolicySet.Port",
                "a port applies to TCP and UDP only",
            ));
        }
        let valid_num = |s: &str| s.parse::<u16>().is_ok_and(|n| n > 0);
        let ok = port == "ALL"
            || valid_num(port)
            || port.split_once('-').is_some_and(|(a, b)| {
                valid_num(a) && valid_num(b) && a.parse::<u16>().ok() <= b.parse::<u16>().ok()
            });
        if !ok {
            return Err(bad(
                "SecurityGroupPolicySet.Port",
                &format!("`{port}` is not a port or port range"),
            ));
        }
    }
    let cidr = opt_str(pol, "CidrBlock");
    let sg = opt_str(pol, "SecurityGroupId");
    match (cidr, sg) {
        (Some(c), None) => {
            if parse_cidr(c).is_none() {
                return Err(bad("SecurityGroupPolicySet.CidrBlock", &format!("`{c}` is not a CIDR block")));
            }
        }
        (None, Some(g)) => {
            if st.sgs.get(g).is_none_or(|x| x.region != region) {
                return Err(ApiError::new("ResourceNotFound", format!("The security group `{g}` does not exist.")));
            }
        }
        _ => {
            return Err(ApiError::new(
                "InvalidParameter",
                "CidrBlock, Ipv6CidrBlock, SecurityGroupId and AddressTemplate are mutually exclusive, and one is required.",
            ))
        }
    }
    let action = opt_str(pol, "Action").unwrap_or("");
    if action != "ACCEPT" && action != "DROP" {
        return Err(bad(
            "SecurityGroupPolicySet.Action",
            "must be ACCEPT or DROP",
        ));
    }
    Ok(pol.clone())
}

fn policy_lists(
    st: &State,
    region: &str,
    p: &Value,
) -> Result<(String, Vec<Value>, Vec<Value>), ApiError> {
    let id = req_str(p, "SecurityGroupId")?.to_string();
    if st.sgs.get(&id).is_none_or(|g| g.region != region) {
        return Err(ApiError::new(
            "ResourceNotFound",
            format!("The security group `{id}` does not exist."),
        ));
    }
    let set = p
        .get("SecurityGroupPolicySet")
        .ok_or_else(|| missing("SecurityGroupPolicySet"))?;
    let list = |key: &str| -> Result<Vec<Value>, ApiError> {
        set.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|pol| check_policy(st, region, pol))
            .collect()
    };
    let ingress = list("Ingress")?;
    let egress = list("Egress")?;
    Ok((id, ingress, egress))
}

/// CreateSecurityGroupPolicies, https://www.tencentcloud.com/document/api/215/15807:
/// appends policies of ONE direction per request (Ingress or Egress).
fn create_security_group_policies(st: &mut State, region: &str, p: &Value) -> R {
    let (id, ingress, egress) = policy_lists(st, region, p)?;
    if ingress.is_empty() == egress.is_empty() {
        return Err(ApiError::new(
            "InvalidParameter",
            "SecurityGroupPolicySet must hold policies of exactly one direction (Ingress or Egress) per request.",
        ));
    }
    if let Some(g) = st.sgs.get_mut(&id) {
        g.ingress.extend(ingress);
        g.egress.extend(egress);
        g.version += 1;
    }
    Ok(json!({}))
}

/// ModifySecurityGroupPolicies, https://www.tencentcloud.com/document/api/215/15810:
/// deletes every policy of the group, then adds the given Ingress and Egress.
fn modify_security_group_policies(st: &mut State, region: &str, p: &Value) -> R {
    let (id, ingress, egress) = policy_lists(st, region, p)?;
    if let Some(g) = st.sgs.get_mut(&id) {
        g.ingress = ingress;
        g.egress = egress;
        g.version += 1;
    }
    Ok(json!({}))
}

/// A stored policy as DescribeSecurityGroupPolicies answers it: every field
/// of the SecurityGroupPolicy structure the page lists (PolicyIndex,
/// Protocol, Port, CidrBlock, Ipv6CidrBlock, SecurityGroupId, Action,
/// PolicyDescription, ModifyTime; ServiceTemplate and AddressTemplate
/// unused here), unset ones as empty strings. `Port` is `ALL` for a TCP or
/// UDP policy created without one.
fn policy_json(index: usize, pol: &Value) -> Value {
    let text = |k: &str| opt_str(pol, k).unwrap_or("").to_string();
    let proto = text("Protocol").to_ascii_uppercase();
    let proto = if proto.is_empty() {
        "ALL".to_string()
    } else {
        proto
    };
    let port = match opt_str(pol, "Port") {
        Some(p) => p.to_string(),
        None if proto == "TCP" || proto == "UDP" => "ALL".to_string(),
        None => String::new(),
    };
    json!({
        "PolicyIndex": index,
        "Protocol": proto,
        "Port": port,
        "ServiceTemplate": {"ServiceId": "", "ServiceGroupId": ""},
        "CidrBlock": text("CidrBlock"),
        "Ipv6CidrBlock": text("Ipv6CidrBlock"),
        "SecurityGroupId": text("SecurityGroupId"),
        "AddressTemplate": {"AddressId": "", "AddressGroupId": ""},
        "Action": text("Action"),
        "PolicyDescription": text("PolicyDescription"),
        "ModifyTime": "2020-01-01 00:00:00",
    })
}

/// DescribeSecurityGroupPolicies, https://www.tencentcloud.com/document/api/215/15804:
/// SecurityGroupId (required); answers `SecurityGroupPolicySet` with
/// `Version` (a string, bumped by each change of the rules), `Egress` and
/// `Ingress`.
fn describe_security_group_policies(st: &mut State, region: &str, p: &Value) -> R {
    let id = req_str(p, "SecurityGroupId")?;
    check_id(id, "sg", "InvalidParameterValue.Malformed")?;
    let Some(g) = st.sgs.get(id).filter(|g| g.region == region) else {
        return Err(ApiError::new(
            "ResourceNotFound",
            format!("The security group `{id}` does not exist."),
        ));
    };
    let list = |v: &[Value]| -> Vec<Value> {
        v.iter()
            .enumerate()
            .map(|(i, pol)| policy_json(i, pol))
            .collect()
    };
    Ok(json!({
        "SecurityGroupPolicySet": {
            "Version": g.version.to_string(),
            "Egress": list(&g.egress),
            "Ingress": list(&g.ingress),
        }
    }))
}

/// DescribeSecurityGroups, https://www.tencentcloud.com/document/api/215/15808:
/// SecurityGroupIds or Filters (security-group-id, security-group-name,
/// tag-key, tag:tag-key), Offset/Limit as String.
fn describe_security_groups(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "SecurityGroupIds", 100)?;
    let mut items = Vec::new();
    for g in st.sgs.values().filter(|g| g.region == region) {
        if !q.ids.is_empty() && !q.ids.contains(&g.id) {
            continue;
        }
        let f = Filterable {
            fields: vec![
                ("security-group-id", g.id.clone()),
                ("security-group-name", g.name.clone()),
            ],
            tags: &g.tags,
        };
        if matches(
            &f,
            &q.filters,
            &["security-group-id", "security-group-name"],
        )? {
            items.push(sg_json(g));
        }
    }
    page(&q, items, "SecurityGroupSet")
}

/// DeleteSecurityGroup, https://www.tencentcloud.com/document/api/215/15803:
/// refused while instances use the group.
fn delete_security_group(st: &mut State, region: &str, p: &Value) -> R {
    let id = req_str(p, "SecurityGroupId")?;
    check_id(id, "sg", "InvalidParameterValue.Malformed")?;
    if st.sgs.get(id).is_none_or(|g| g.region != region) {
        return Err(ApiError::new(
            "ResourceNotFound",
            format!("The security group `{id}` does not exist."),
        ));
    }
    // Instances in the recycle bin (SHUTDOWN) keep their groups (213/4931).
    if let Some(i) = st
        .instances
        .values()
        .find(|i| i.security_groups.iter().any(|g| g == id))
    {
        return Err(ApiError::new(
            "ResourceInUse",
            format!(
                "The security group `{id}` is bound to instance `{}` ({}).",
                i.id, i.state
            ),
        ));
    }
    st.sgs.remove(id);
    Ok(json!({}))
}

// ---------------------------------------------------------------- CVM (213)

/// DescribeImages, https://www.tencentcloud.com/document/api/213/33272:
/// ImageIds or Filters (image-id, image-type, image-name (fuzzy), platform),
/// at most 10 Filters with 5 Values each. The stand-in has a few public images.
/// The China site names them "… 64位" where the international site writes
/// "… 64bit" (its image list, https://cloud.tencent.com/document/api/213/1272:
/// "CentOS 7.2 64位", "Ubuntu Server 14.04.1 LTS 64位").
fn describe_images(st: &State, p: &Value) -> R {
    let q = query(p, "ImageIds", 5)?;
    let mut items = Vec::new();
    for i in IMAGES {
        if !q.ids.is_empty() && !q.ids.iter().any(|x| x == i.id) {
            continue;
        }
        let localized = |n: &str| {
            if st.faults.china_site_images {
                n.replace("64bit", "64位")
            } else {
                n.to_string()
            }
        };
        let (name, os_name) = (localized(i.name), localized(i.os_name));
        let none = Vec::new();
        let f = Filterable {
            fields: vec![
                ("image-id", i.id.into()),
                ("image-type", "PUBLIC_IMAGE".into()),
                ("image-name", name.clone()),
                ("platform", i.platform.into()),
            ],
            tags: &none,
        };
        if matches(
            &f,
            &q.filters,
            &["image-id", "image-type", "image-name", "platform"],
        )? {
            items.push(json!({
                "ImageId": i.id, "OsName": os_name, "ImageType": "PUBLIC_IMAGE", "CreatedTime": i.created,
                "ImageName": name, "ImageDescription": name, "ImageSize": 20, "Architecture": "x86_64",
                "ImageState": "NORMAL", "Platform": i.platform, "ImageCreator": "", "ImageSource": "OFFICIAL",
                "IsSupportCloudinit": true, "Tags": [],
            }));
        }
    }
    page(&q, items, "ImageSet")
}

/// Instances a spread placement group can hold (the CvmQuotaTotal the
/// CreateDisasterRecoverGroup example answers with).
const GROUP_CAPACITY: usize = 50;

fn group_json(st: &State, g: &PlacementGroup) -> Value {
    let members = st.group_members(&g.id);
    json!({
        "DisasterRecoverGroupId": g.id, "Name": g.name, "Type": g.kind, "CvmQuotaTotal": GROUP_CAPACITY,
        "CurrentNum": members.len(), "InstanceIds": members, "CreateTime": g.created, "Affinity": 1,
        "Tags": tags_json(&g.tags),
    })
}

/// CreateDisasterRecoverGroup, https://www.tencentcloud.com/document/api/213/33264:
/// Name (1-60), Type HOST | SW | RACK, ClientToken, TagSpecification.
fn create_disaster_recover_group(st: &mut State, region: &str, p: &Value) -> R {
    let name = req_str(p, "Name")?;
    let kind = req_str(p, "Type")?;
    if !["HOST", "SW", "RACK"].contains(&kind) {
        return Err(bad("Type", "must be HOST, SW or RACK"));
    }
    if name.chars().count() > 60 {
        return Err(bad("Name", "longer than 60 characters"));
    }
    let token = client_token(p)?;
    if let Some(t) = &token {
        if let Some(ids) = st
            .tokens
            .get(&("CreateDisasterRecoverGroup".into(), t.clone()))
        {
            if let Some(g) = ids.first().and_then(|id| st.groups.get(id)) {
                return Ok(group_create_answer(g));
            }
        }
    }
    let tags = spec_tags(p, "ps")?;
    let id = st.new_id("ps");
    let g = PlacementGroup {
        id: id.clone(),
        region: region.into(),
        name: name.into(),
        kind: kind.into(),
        tags,
        created: now_iso(),
    };
    let out = group_create_answer(&g);
    st.groups.insert(id.clone(), g);
    if let Some(t) = token {
        st.tokens
            .insert(("CreateDisasterRecoverGroup".into(), t), vec![id]);
    }
    Ok(out)
}

fn group_create_answer(g: &PlacementGroup) -> Value {
    json!({
        "DisasterRecoverGroupId": g.id, "Type": g.kind, "Name": g.name,
        "CvmQuotaTotal": GROUP_CAPACITY, "CurrentNum": 0, "CreateTime": g.created,
    })
}

/// DescribeDisasterRecoverGroups, https://www.tencentcloud.com/document/api/213/33261:
/// DisasterRecoverGroupIds, Name (fuzzy), Offset, Limit (Integer).
fn describe_disaster_recover_groups(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "DisasterRecoverGroupIds", 5)?;
    let name = opt_str(p, "Name");
    let items: Vec<Value> = st
        .groups
        .values()
        .filter(|g| g.region == region)
        .filter(|g| q.ids.is_empty() || q.ids.contains(&g.id))
        .filter(|g| name.is_none_or(|n| g.name.contains(n)))
        .map(|g| group_json(st, g))
        .collect();
    page(&q, items, "DisasterRecoverGroupSet")
}

/// DeleteDisasterRecoverGroups, https://www.tencentcloud.com/document/api/213/33266:
/// groups must be empty (FailedOperation.PlacementSetNotEmpty).
fn delete_disaster_recover_groups(st: &mut State, region: &str, p: &Value) -> R {
    let ids = str_list(p, "DisasterRecoverGroupIds")?;
    if ids.is_empty() {
        return Err(missing("DisasterRecoverGroupIds"));
    }
    for id in &ids {
        if st.groups.get(id).is_none_or(|g| g.region != region) {
            return Err(ApiError::new(
                "ResourceNotFound.InvalidPlacementSet",
                format!("The placement group `{id}` does not exist."),
            ));
        }
        if !st.group_members(id).is_empty() {
            return Err(ApiError::new(
                "FailedOperation.PlacementSetNotEmpty",
                format!("The placement group `{id}` still holds instances."),
            ));
        }
    }
    for id in ids {
        st.groups.remove(&id);
    }
    Ok(json!({}))
}

fn is_base64(s: &str) -> bool {
    !s.is_empty()
        && s.len().is_multiple_of(4)
        && s.trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        && s.len() - s.trim_end_matches('=').len() <= 2
}

/// InquiryPriceRunInstances, https://www.tencentcloud.com/document/api/213/33248:
/// the parameters of RunInstances (Placement.Zone, ImageId and InstanceType
/// required; InstanceChargeType with InstanceChargePrepaid.Period or
/// InstanceMarketOptions), answered with `Price.InstancePrice`, an ItemPrice
/// (https://www.tencentcloud.com/document/api/213/15753#ItemPrice):
/// `UnitPrice` / `UnitPriceDiscount` per `ChargeUnit` `HOUR` for
/// POSTPAID_BY_HOUR and SPOTPAID, `OriginalPrice` / `DiscountPrice` for the
/// whole PREPAID period. The stand-in gives no discount.
fn inquiry_price_run_instances(st: &mut State, region: &str, p: &Value) -> R {
    let zone = p
        .get("Placement")
        .and_then(|pl| pl.get("Zone"))
        .and_then(Value::as_str)
        .ok_or_else(|| missing("Placement.Zone"))?;
    check_zone(region, zone)?;
    let itype = req_str(p, "InstanceType")?;
    let image = req_str(p, "ImageId")?;
    if !IMAGES.iter().any(|i| i.id == image) {
        return Err(ApiError::new(
            "InvalidImageId.NotFound",
            format!("The image `{image}` does not exist."),
        ));
    }
    if st.prices.outage() {
        return Err(ApiError::new(
            "InternalError",
            "An internal error occurred. Please try again later.",
        ));
    }
    let Some(list) = st.prices.get(itype) else {
        return Err(ApiError::new(
            "InvalidParameterValue.InstanceTypeNotFound",
            format!("The instance type `{itype}` does not exist."),
        ));
    };
    let hourly = |price: f64| json!({"UnitPrice": price, "UnitPriceDiscount": price, "ChargeUnit": "HOUR", "Discount": 100});
    let instance_price = match opt_str(p, "InstanceChargeType").unwrap_or("POSTPAID_BY_HOUR") {
        "POSTPAID_BY_HOUR" => hourly(list.hourly),
        "PREPAID" => {
            let prepaid = p
                .get("InstanceChargePrepaid")
                .ok_or_else(|| missing("InstanceChargePrepaid"))?;
            let months = opt_int(prepaid, "Period")?
                .ok_or_else(|| missing("InstanceChargePrepaid.Period"))?;
            let total = match months {
                1 => list.month,
                12 => list.year,
                2..=11 => list.month * months as f64,
                24 | 36 | 48 | 60 => list.year * (months / 12) as f64,
                _ => {
                    return Err(ApiError::new(
                        "InvalidPeriod",
                        "The period must be 1-12, 24, 36, 48 or 60 months.",
                    ))
                }
            };
            json!({"OriginalPrice": total, "DiscountPrice": total, "Discount": 100})
        }
        "SPOTPAID" => {
            let market = p
                .get("InstanceMarketOptions")
                .ok_or_else(|| missing("InstanceMarketOptions"))?;
            if opt_str(market, "MarketType") != Some("spot") {
                return Err(bad("InstanceMarketOptions.MarketType", "must be `spot`"));
            }
            match list.spot {
                Some(s) => hourly(s),
                None => {
                    return Err(ApiError::new(
                        "InvalidParameterValue.InsufficientOffering",
                        format!("Spot instances of `{itype}` are not sold in `{zone}`."),
                    ))
                }
            }
        }
        other => {
            return Err(bad(
                "InstanceChargeType",
                &format!("`{other}` is not supported"),
            ))
        }
    };
    Ok(json!({"Price": {"InstancePrice": instance_price, "BandwidthPrice": {}}}))
}

/// DescribeRegions, https://www.tencentcloud.com/document/api/213/32907:
/// `TotalCount`, `RegionSet` of RegionInfo {Region, RegionName, RegionState}.
fn describe_regions(st: &mut State) -> R {
    let set: Vec<Value> = st
        .geography
        .regions()
        .map(|r| json!({"Region": r, "RegionName": r, "RegionState": "AVAILABLE"}))
        .collect();
    Ok(json!({"TotalCount": set.len(), "RegionSet": set}))
}

/// The region of a call, which must be one the stand-in lists
/// (common error code `UnsupportedRegion`, 213/15694).
fn known_region<'g>(st: &'g State, region: &str) -> Result<&'g Vec<String>, ApiError> {
    st.geography.zones(region).ok_or_else(|| {
        ApiError::new(
            "UnsupportedRegion",
            format!("The region `{region}` is not supported by this API."),
        )
    })
}

/// DescribeZones, https://www.tencentcloud.com/document/api/213/35071:
/// `TotalCount`, `ZoneSet` of ZoneInfo {Zone, ZoneName, ZoneId, ZoneState}.
fn describe_zones(st: &mut State, region: &str) -> R {
    let set: Vec<Value> = known_region(st, region)?
        .iter()
        .enumerate()
        .map(|(i, z)| {
            json!({"Zone": z, "ZoneName": z, "ZoneId": format!("{}", 100001 + i), "ZoneState": "AVAILABLE"})
        })
        .collect();
    Ok(json!({"TotalCount": set.len(), "ZoneSet": set}))
}

/// DescribeZoneInstanceConfigInfos, https://www.tencentcloud.com/document/api/213/33254:
/// Filters `zone`, `instance-family`, `instance-type`,
/// `instance-charge-type` (POSTPAID_BY_HOUR, SPOTPAID...); answers
/// `InstanceTypeQuotaSet` of InstanceTypeQuotaItem {Zone, InstanceType,
/// InstanceChargeType, InstanceFamily, TypeName, Cpu, Memory, Gpu,
/// GpuCount, Status (SELL / SOLD_OUT), StatusCategory, Price, Externals}.
fn describe_zone_instance_config_infos(st: &mut State, region: &str, p: &Value) -> R {
    known_region(st, region)?;
    let filters = parse_filters(p)?;
    let known = [
        "zone",
        "instance-family",
        "instance-type",
        "instance-charge-type",
    ];
    if let Some((n, _)) = filters.iter().find(|(n, _)| !known.contains(&n.as_str())) {
        return Err(bad(
            "Filters.Name",
            &format!("`{n}` is not a filter of this action"),
        ));
    }
    let want = |name: &str, v: &str| {
        filters
            .iter()
            .filter(|(n, _)| n == name)
            .all(|(_, vals)| vals.iter().any(|x| x == v))
    };
    let charge = filters
        .iter()
        .find(|(n, _)| n == "instance-charge-type")
        .and_then(|(_, v)| v.first().cloned())
        .unwrap_or_else(|| "POSTPAID_BY_HOUR".into());
    let set: Vec<Value> = st
        .geography
        .offers_in(region)
        .into_iter()
        .filter(|o| {
            let family = o.instance_type.split('.').next().unwrap_or("");
            want("zone", &o.zone)
                && want("instance-family", family)
                && want("instance-type", &o.instance_type)
        })
        .map(|o| {
            let family = o.instance_type.split('.').next().unwrap_or("");
            json!({
                "Zone": o.zone,
                "InstanceType": o.instance_type,
                "InstanceChargeType": charge,
                "InstanceFamily": family,
                "TypeName": family,
                "Cpu": 8,
                "Memory": 32,
                "Gpu": o.gpus,
                "GpuCount": f64::from(o.gpus),
                "Fpga": 0,
                "Status": if o.sold_out { "SOLD_OUT" } else { "SELL" },
                "StatusCategory": if o.sold_out { "WithoutStock" } else { "EnoughStock" },
                "SoldOutReason": "",
                "Price": {},
                "Externals": {},
                "LocalDiskTypeList": [],
                "Remark": "",
            })
        })
        .collect();
    Ok(json!({"InstanceTypeQuotaSet": set}))
}

/// DescribeAccountQuota, https://cloud.tencent.com/document/api/213/55628:
/// Filters `zone` and `quota-type` (PostPaidQuotaSet, PrePaidQuotaSet,
/// SpotPaidQuotaSet, ImageQuotaSet, DisasterRecoverGroupQuotaSet); answers
/// `AppId` and `AccountQuotaOverview` {Region, AccountQuota {PostPaidQuotaSet
/// and SpotPaidQuotaSet of {UsedQuota, RemainingQuota, TotalQuota, Zone},
/// PrePaidQuotaSet of the same plus ReleaseQuota and OnceQuota, ...}}: instance
/// counts per zone of the region.
fn describe_account_quota(st: &mut State, region: &str, p: &Value) -> R {
    if st.faults.deny_quota {
        return Err(ApiError::new(
            "UnauthorizedOperation",
            "The CAM policy does not allow cvm:DescribeAccountQuota.",
        ));
    }
    let filters = parse_filters(p)?;
    let known = ["zone", "quota-type"];
    if let Some((n, _)) = filters.iter().find(|(n, _)| !known.contains(&n.as_str())) {
        return Err(bad(
            "Filters.Name",
            &format!("`{n}` is not a filter of this action"),
        ));
    }
    let want = |name: &str, v: &str| {
        filters
            .iter()
            .filter(|(n, _)| n == name)
            .all(|(_, vals)| vals.iter().any(|x| x == v))
    };
    // The region's zones: its geography, the zones a test set quotas in
    // (a Tencent zone is named `<region>-<n>`), and where instances run.
    let prefix = format!("{region}-");
    let mut zones: std::collections::BTreeSet<String> = st
        .geography
        .zones(region)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect();
    zones.extend(
        st.faults
            .zone_quotas
            .keys()
            .map(|(_, z)| z.clone())
            .filter(|z| z.starts_with(&prefix)),
    );
    zones.extend(
        st.instances
            .values()
            .filter(|i| i.region == region)
            .map(|i| i.zone.clone()),
    );
    let mut quota = Map::new();
    for (set, charge) in [
        ("PostPaidQuotaSet", "POSTPAID_BY_HOUR"),
        ("PrePaidQuotaSet", "PREPAID"),
        ("SpotPaidQuotaSet", "SPOTPAID"),
    ] {
        if !want("quota-type", set) {
            continue;
        }
        let items: Vec<Value> = zones
            .iter()
            .filter(|z| want("zone", z))
            .map(|z| {
                let total = st
                    .faults
                    .zone_quotas
                    .get(&(set.to_string(), z.clone()))
                    .copied()
                    .unwrap_or(super::state::DEFAULT_ZONE_QUOTA);
                let used = st
                    .instances
                    .values()
                    .filter(|i| i.region == region && &i.zone == z && i.charge == charge)
                    .count() as u64;
                let mut item = json!({
                    "UsedQuota": used,
                    "RemainingQuota": total.saturating_sub(used),
                    "TotalQuota": total,
                    "Zone": z,
                });
                if set == "PrePaidQuotaSet" {
                    item["ReleaseQuota"] = json!(0);
                    item["OnceQuota"] = json!(total);
                }
                item
            })
            .collect();
        quota.insert(set.to_string(), Value::Array(items));
    }
    Ok(json!({
        "AppId": 1251783334u64,
        "AccountQuotaOverview": {"Region": region, "AccountQuota": quota},
    }))
}

/// RunInstances, https://www.tencentcloud.com/document/api/213/33237.
/// Placement.Zone, InstanceType, ImageId, InstanceChargeType
/// (POSTPAID_BY_HOUR default, PREPAID + InstanceChargePrepaid.Period,
/// SPOTPAID + InstanceMarketOptions), SystemDisk, VirtualPrivateCloud,
/// SecurityGroupIds, DisasterRecoverGroupIds, InstanceCount (1-500),
/// InstanceName (≤ 60), ClientToken, TagSpecification (ResourceType
/// `instance`), UserData (base64, ≤ 16 KB). New instances are PENDING, then
/// RUNNING, or LAUNCH_FAILED (213/15753) when the launch fails. Each gets a
/// system disk, and the TagSpecification tags "can be bound to the
/// corresponding CVM and CBS instances at the same time"
/// (https://cloud.tencent.com/document/api/213/15730): the system disk carries
/// the instance's tags.
fn run_instances(st: &mut State, region: &str, p: &Value) -> R {
    let token = client_token(p)?;
    if let Some(t) = &token {
        if let Some(ids) = st.tokens.get(&("RunInstances".into(), t.clone())) {
            return Ok(json!({ "InstanceIdSet": ids }));
        }
    }
    let zone = p
        .get("Placement")
        .and_then(|pl| pl.get("Zone"))
        .and_then(Value::as_str)
        .ok_or_else(|| missing("Placement.Zone"))?;
    check_zone(region, zone)?;
    let itype = req_str(p, "InstanceType")?;
    let image = req_str(p, "ImageId")?;
    if !image.starts_with("img-") {
        return Err(ApiError::new(
            "InvalidImageId.Malformed",
            format!("The image id `{image}` is malformed."),
        ));
    }
    if !IMAGES.iter().any(|i| i.id == image) {
        return Err(ApiError::new(
            "InvalidImageId.NotFound",
            format!("The image `{image}` does not exist."),
        ));
    }
    let count = opt_int(p, "InstanceCount")?.unwrap_or(1) as usize;
    if !(1..=500).contains(&count) {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            "InstanceCount must be between 1 and 500.",
        ));
    }
    let name = opt_str(p, "InstanceName").unwrap_or("未命名");
    if name.chars().count() > 60 {
        return Err(ApiError::new(
            "InvalidInstanceName.TooLong",
            "The InstanceName must be at most 60 characters.",
        ));
    }
    let charge = opt_str(p, "InstanceChargeType").unwrap_or("POSTPAID_BY_HOUR");
    let mut period = None;
    match charge {
        "POSTPAID_BY_HOUR" => {}
        "PREPAID" => {
            let prepaid = p
                .get("InstanceChargePrepaid")
                .ok_or_else(|| missing("InstanceChargePrepaid"))?;
            let months = opt_int(prepaid, "Period")?
                .ok_or_else(|| missing("InstanceChargePrepaid.Period"))?;
            if !matches!(months, 1..=12 | 24 | 36 | 48 | 60) {
                return Err(ApiError::new(
                    "InvalidPeriod",
                    "The period must be 1-12, 24, 36, 48 or 60 months.",
                ));
            }
            period = Some(months);
        }
        "SPOTPAID" => {
            let market = p
                .get("InstanceMarketOptions")
                .ok_or_else(|| missing("InstanceMarketOptions"))?;
            if opt_str(market, "MarketType") != Some("spot") {
                return Err(bad("InstanceMarketOptions.MarketType", "must be `spot`"));
            }
            market
                .get("SpotOptions")
                .and_then(|o| o.get("MaxPrice"))
                .and_then(Value::as_str)
                .ok_or_else(|| missing("InstanceMarketOptions.SpotOptions.MaxPrice"))?;
        }
        other => {
            return Err(bad(
                "InstanceChargeType",
                &format!("`{other}` is not supported"),
            ))
        }
    }
    let disk_gb = match p.get("SystemDisk") {
        Some(d) => opt_int(d, "DiskSize")?.unwrap_or(50),
        None => 50,
    };
    if !(20..=2048).contains(&disk_gb) {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            "SystemDisk.DiskSize must be between 20 and 2048 GB.",
        ));
    }
    let vpc_cfg = p
        .get("VirtualPrivateCloud")
        .ok_or_else(|| missing("VirtualPrivateCloud"))?;
    let vpc = req_str(vpc_cfg, "VpcId")?;
    let subnet = req_str(vpc_cfg, "SubnetId")?;
    if st.vpcs.get(vpc).is_none_or(|v| v.region != region) {
        return Err(ApiError::new(
            "InvalidParameterValue.VpcIdNotExist",
            format!("The VPC `{vpc}` does not exist."),
        ));
    }
    let sn = st
        .subnets
        .get(subnet)
        .filter(|s| s.region == region && s.vpc == vpc)
        .ok_or_else(|| {
            ApiError::new(
                "InvalidParameterValue.SubnetNotExist",
                format!("The subnet `{subnet}` does not exist in `{vpc}`."),
            )
        })?;
    if sn.zone != zone {
        return Err(ApiError::new(
            "InvalidParameterValue.VpcIdZoneIdNotMatch",
            format!(
                "The subnet `{subnet}` is in `{}`, not in `{zone}`.",
                sn.zone
            ),
        ));
    }
    let subnet_cidr = parse_cidr(&sn.cidr).unwrap_or((0, 32));
    let sgs = str_list(p, "SecurityGroupIds")?;
    for g in &sgs {
        if st.sgs.get(g).is_none_or(|x| x.region != region) {
            return Err(ApiError::new(
                "InvalidSecurityGroupId.NotFound",
                format!("The security group `{g}` does not exist."),
            ));
        }
    }
    let groups = str_list(p, "DisasterRecoverGroupIds")?;
    if groups.len() > 1 {
        return Err(bad(
            "DisasterRecoverGroupIds",
            "at most one placement group",
        ));
    }
    if let Some(g) = groups.first() {
        if st.groups.get(g).is_none_or(|x| x.region != region) {
            return Err(ApiError::new(
                "ResourceNotFound.InvalidPlacementSet",
                format!("The placement group `{g}` does not exist."),
            ));
        }
        if st.group_members(g).len() + count > GROUP_CAPACITY {
            return Err(ApiError::new(
                "ResourceInsufficient.DisasterRecoverGroupCvmQuota",
                format!("The placement group `{g}` cannot hold {count} more instances."),
            ));
        }
    }
    if let Some(u) = opt_str(p, "UserData") {
        if !is_base64(u) || u.len() > 16 * 1024 {
            return Err(ApiError::new(
                "InvalidParameterValue.InvalidUserDataFormat",
                "UserData must be base64 and at most 16 KB.",
            ));
        }
    }
    let tags = spec_tags(p, "instance")?;
    if st
        .faults
        .sold_out
        .contains(&(itype.to_string(), zone.to_string()))
    {
        return Err(ApiError::new(
            "ResourceInsufficient.SpecifiedInstanceType",
            format!("The instance type `{itype}` is out of stock in `{zone}`."),
        ));
    }
    if let Some(max) = st.faults.instance_quota {
        let running = st
            .instances
            .values()
            .filter(|i| i.state != "TERMINATING")
            .count();
        if running + count > max {
            return Err(ApiError::new(
                "LimitExceeded.InstanceQuota",
                format!("The instance quota ({max}) is not enough for {count} more instances ({running} in use)."),
            ));
        }
    }
    let launch_fails = st
        .faults
        .launch_fails
        .contains(&(itype.to_string(), zone.to_string()));
    let mut ids = Vec::new();
    for _ in 0..count {
        let id = st.new_id("ins");
        let disk_id = st.new_id("disk");
        st.disks.insert(
            disk_id.clone(),
            Disk {
                id: disk_id.clone(),
                region: region.into(),
                zone: zone.into(),
                name: format!("{name}-system"),
                size: disk_gb,
                dtype: "CLOUD_PREMIUM".into(),
                charge: if charge == "PREPAID" {
                    "PREPAID"
                } else {
                    "POSTPAID_BY_HOUR"
                }
                .into(),
                usage: SYSTEM_DISK,
                tags: tags.clone(),
                state: "ATTACHED".into(),
                instance: Some(id.clone()),
                changed_at: st.tick,
                created: now_iso(),
            },
        );
        let used = st.instances.values().filter(|i| i.subnet == subnet).count() as u32;
        let ip =
            Ipv4Addr::from(subnet_cidr.0.wrapping_add(2 + used + ids.len() as u32)).to_string();
        let inst = Instance {
            id: id.clone(),
            region: region.into(),
            zone: zone.into(),
            name: name.into(),
            itype: itype.into(),
            image: image.into(),
            charge: charge.into(),
            period_months: period,
            system_disk_gb: disk_gb,
            system_disk_id: disk_id,
            vpc: vpc.into(),
            subnet: subnet.into(),
            private_ip: ip,
            security_groups: sgs.clone(),
            placement: groups.first().cloned(),
            tags: tags.clone(),
            state: "PENDING".into(),
            changed_at: st.tick,
            created: now_iso(),
            launch_fails,
            releasing: false,
        };
        st.instances.insert(id.clone(), inst);
        ids.push(id);
    }
    if let Some(t) = token {
        st.tokens.insert(("RunInstances".into(), t), ids.clone());
    }
    Ok(json!({ "InstanceIdSet": ids }))
}

fn instance_json(i: &Instance) -> Value {
    let expired = i.period_months.map(|m| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        iso(now + m * 30 * 86_400)
    });
    json!({
        "Placement": {"Zone": i.zone, "ProjectId": 0},
        "InstanceId": i.id,
        "InstanceType": i.itype,
        "InstanceName": i.name,
        "InstanceChargeType": i.charge,
        "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskId": i.system_disk_id, "DiskSize": i.system_disk_gb},
        "DataDisks": [],
        "PrivateIpAddresses": [i.private_ip],
        "PublicIpAddresses": null,
        "VirtualPrivateCloud": {"VpcId": i.vpc, "SubnetId": i.subnet, "AsVpcGateway": false},
        "ImageId": i.image,
        "RenewFlag": if i.period_months.is_some() { json!("NOTIFY_AND_MANUAL_RENEW") } else { Value::Null },
        "CreatedTime": i.created,
        "ExpiredTime": expired,
        "SecurityGroupIds": i.security_groups,
        "InstanceState": i.state,
        "Tags": tags_json(&i.tags),
        "DisasterRecoverGroupId": i.placement.clone().unwrap_or_default(),
        "LatestOperation": if i.state == "LAUNCH_FAILED" { json!("RunInstances") } else { Value::Null },
        "LatestOperationState": if i.state == "LAUNCH_FAILED" { json!("FAILED") } else { Value::Null },
    })
}

/// DescribeInstances, https://www.tencentcloud.com/document/api/213/33258:
/// InstanceIds (≤ 100) or Filters (≤ 10, 5 Values each: zone, vpc-id,
/// subnet-id, instance-id, security-group-id, instance-name, instance-state,
/// instance-charge-type, tag-key, tag-value, tag:tag-key), Offset, Limit
/// (Integer, ≤ 100). Malformed ids are refused; unknown ids are left out.
fn describe_instances(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "InstanceIds", 5)?;
    for id in &q.ids {
        check_id(id, "ins", "InvalidInstanceId.Malformed")?;
    }
    let known = [
        "zone",
        "vpc-id",
        "subnet-id",
        "instance-id",
        "security-group-id",
        "instance-name",
        "instance-state",
        "instance-charge-type",
    ];
    let (sg_filters, filters): (Vec<_>, Vec<_>) = q
        .filters
        .iter()
        .cloned()
        .partition(|(n, _)| n == "security-group-id");
    let mut items = Vec::new();
    for i in st.instances.values().filter(|i| i.region == region) {
        if !q.ids.is_empty() && !q.ids.contains(&i.id) {
            continue;
        }
        // `security-group-id` matches any of the instance's groups.
        if sg_filters
            .iter()
            .any(|(_, vals)| !i.security_groups.iter().any(|g| vals.contains(g)))
        {
            continue;
        }
        let f = Filterable {
            fields: vec![
                ("zone", i.zone.clone()),
                ("vpc-id", i.vpc.clone()),
                ("subnet-id", i.subnet.clone()),
                ("instance-id", i.id.clone()),
                ("instance-name", i.name.clone()),
                ("instance-state", i.state.clone()),
                ("instance-charge-type", i.charge.clone()),
            ],
            tags: &i.tags,
        };
        if matches(&f, &filters, &known)? {
            items.push(instance_json(i));
        }
    }
    page(&q, items, "InstanceSet")
}

/// TerminateInstances, https://www.tencentcloud.com/document/api/213/33255:
/// InstanceIds (≤ 100). The instance turns TERMINATING, then goes to the
/// recycle bin (SHUTDOWN) where it keeps its subnet, security groups and
/// attached cloud disks ("after the instance enters the recycle bin, its
/// mounting relationship with ... Cloud Block Storage ... will not be
/// automatically terminated", https://www.tencentcloud.com/document/product/213/4931;
/// lifecycle "Terminating → Reclaimed → Released", 213/4856). Terminating it
/// again from the recycle bin releases it: its system disk goes, data disks
/// are detached and kept.
fn terminate_instances(st: &mut State, region: &str, p: &Value) -> R {
    let ids = str_list(p, "InstanceIds")?;
    if ids.is_empty() {
        return Err(missing("InstanceIds"));
    }
    if ids.len() > 100 {
        return Err(ApiError::new(
            "InvalidParameterValue.LimitExceeded",
            "At most 100 InstanceIds per request.",
        ));
    }
    for id in &ids {
        check_id(id, "ins", "InvalidInstanceId.Malformed")?;
        match st.instances.get(id).filter(|i| i.region == region) {
            None => {
                return Err(ApiError::new(
                    "InvalidInstanceId.NotFound",
                    format!("The instance `{id}` does not exist."),
                ))
            }
            Some(i) if i.state == "TERMINATING" => {
                return Err(ApiError::new(
                    "UnsupportedOperation.InstanceStateTerminating",
                    format!("The instance `{id}` is already terminating."),
                ))
            }
            Some(_) => {}
        }
    }
    let now = st.tick;
    for id in &ids {
        if let Some(i) = st.instances.get_mut(id) {
            i.releasing = i.state == "SHUTDOWN";
            i.state = "TERMINATING".into();
            i.changed_at = now;
        }
    }
    Ok(json!({}))
}

// ---------------------------------------------------------------- CBS (362)

const DISK_TYPES: &[&str] = &[
    "CLOUD_BASIC",
    "CLOUD_PREMIUM",
    "CLOUD_BSSD",
    "CLOUD_SSD",
    "CLOUD_HSSD",
    "CLOUD_TSSD",
];

fn disk_json(d: &Disk) -> Value {
    json!({
        "DiskId": d.id, "DiskUsage": d.usage, "DiskChargeType": d.charge, "Portable": d.usage == DATA_DISK,
        "Placement": {"Zone": d.zone, "ProjectId": 0}, "DiskName": d.name, "DiskSize": d.size,
        "DiskState": d.state, "DiskType": d.dtype, "Attached": d.state == "ATTACHED",
        "InstanceId": d.instance.clone().unwrap_or_default(), "CreateTime": d.created,
        "DeleteWithInstance": false, "Encrypt": false, "Tags": tags_json(&d.tags),
    })
}

/// CreateDisks, https://www.tencentcloud.com/document/api/362/16312:
/// Placement.Zone, DiskChargeType, DiskType, DiskSize, DiskCount, DiskName,
/// ClientToken, Tags. New disks are UNATTACHED.
fn create_disks(st: &mut State, region: &str, p: &Value) -> R {
    let token = client_token(p)?;
    if let Some(t) = &token {
        if let Some(ids) = st.tokens.get(&("CreateDisks".into(), t.clone())) {
            return Ok(json!({ "DiskIdSet": ids }));
        }
    }
    let zone = p
        .get("Placement")
        .and_then(|pl| pl.get("Zone"))
        .and_then(Value::as_str)
        .ok_or_else(|| missing("Placement.Zone"))?;
    check_zone(region, zone)?;
    let charge = req_str(p, "DiskChargeType")?;
    if !["POSTPAID_BY_HOUR", "PREPAID", "CDCPAID"].contains(&charge) {
        return Err(bad(
            "DiskChargeType",
            "must be POSTPAID_BY_HOUR, PREPAID or CDCPAID",
        ));
    }
    let dtype = req_str(p, "DiskType")?;
    if !DISK_TYPES.contains(&dtype) {
        return Err(bad(
            "DiskType",
            &format!("`{dtype}` is not one of {}", DISK_TYPES.join(", ")),
        ));
    }
    let size = opt_int(p, "DiskSize")?.ok_or_else(|| missing("DiskSize"))?;
    if !(10..=32_000).contains(&size) {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            "DiskSize must be between 10 and 32000 GB.",
        ));
    }
    let count = opt_int(p, "DiskCount")?.unwrap_or(1) as usize;
    if !(1..=100).contains(&count) {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            "DiskCount must be between 1 and 100.",
        ));
    }
    let name = opt_str(p, "DiskName").unwrap_or("未命名");
    let tags = parse_tags(p.get("Tags"), "Tags")?;
    let mut ids = Vec::new();
    for _ in 0..count {
        let id = st.new_id("disk");
        st.disks.insert(
            id.clone(),
            Disk {
                id: id.clone(),
                region: region.into(),
                zone: zone.into(),
                name: name.into(),
                size,
                dtype: dtype.into(),
                charge: charge.into(),
                usage: DATA_DISK,
                tags: tags.clone(),
                state: "UNATTACHED".into(),
                instance: None,
                changed_at: st.tick,
                created: now_iso(),
            },
        );
        ids.push(id);
    }
    if let Some(t) = token {
        st.tokens.insert(("CreateDisks".into(), t), ids.clone());
    }
    Ok(json!({ "DiskIdSet": ids }))
}

/// DescribeDisks, https://www.tencentcloud.com/document/api/362/16315:
/// DiskIds or Filters (disk-id, zone, instance-id, disk-state, disk-type,
/// disk-usage (SYSTEM_DISK or DATA_DISK), disk-name, tag-key, tag-value,
/// tag:tag-key), Offset, Limit (Integer, ≤ 100). System disks are listed too.
fn describe_disks(st: &mut State, region: &str, p: &Value) -> R {
    let q = query(p, "DiskIds", 100)?;
    let known = [
        "disk-id",
        "zone",
        "instance-id",
        "disk-state",
        "disk-type",
        "disk-usage",
        "disk-name",
    ];
    let mut items = Vec::new();
    for d in st.disks.values().filter(|d| d.region == region) {
        if !q.ids.is_empty() && !q.ids.contains(&d.id) {
            continue;
        }
        let f = Filterable {
            fields: vec![
                ("disk-id", d.id.clone()),
                ("zone", d.zone.clone()),
                ("instance-id", d.instance.clone().unwrap_or_default()),
                ("disk-state", d.state.clone()),
                ("disk-type", d.dtype.clone()),
                ("disk-usage", d.usage.to_string()),
                ("disk-name", d.name.clone()),
            ],
            tags: &d.tags,
        };
        if matches(&f, &q.filters, &known)? {
            items.push(disk_json(d));
        }
    }
    page(&q, items, "DiskSet")
}

fn disk_ids(st: &State, region: &str, p: &Value) -> Result<Vec<String>, ApiError> {
    let ids = str_list(p, "DiskIds")?;
    if ids.is_empty() {
        return Err(missing("DiskIds"));
    }
    for id in &ids {
        match st.disks.get(id).filter(|d| d.region == region) {
            None => {
                return Err(ApiError::new(
                    "InvalidDiskId.NotFound",
                    format!("The disk `{id}` does not exist."),
                ))
            }
            // A system disk is not elastic (Portable false): it cannot be
            // attached, detached or terminated on its own.
            Some(d) if d.usage == SYSTEM_DISK => {
                return Err(ApiError::new(
                    "ResourceUnavailable.NotPortable",
                    format!("The disk `{id}` is a system disk and is not portable."),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(ids)
}

/// AttachDisks, https://www.tencentcloud.com/document/api/362/16313:
/// DiskIds, InstanceId; disk and instance in the same zone; the instance must
/// be RUNNING or STOPPED (busy otherwise). Disks go ATTACHING → ATTACHED.
fn attach_disks(st: &mut State, region: &str, p: &Value) -> R {
    let ids = disk_ids(st, region, p)?;
    let inst_id = req_str(p, "InstanceId")?;
    let inst = st
        .instances
        .get(inst_id)
        .filter(|i| i.region == region && i.state != "TERMINATING")
        .ok_or_else(|| {
            ApiError::new(
                "InvalidInstanceId.NotFound",
                format!("The instance `{inst_id}` does not exist."),
            )
        })?;
    if inst.state != "RUNNING" && inst.state != "STOPPED" {
        return Err(ApiError::new(
            "ResourceBusy",
            format!(
                "The instance `{inst_id}` is {}; try again later.",
                inst.state
            ),
        ));
    }
    let zone = inst.zone.clone();
    for id in &ids {
        let d = &st.disks[id];
        if d.state != "UNATTACHED" {
            return Err(ApiError::new(
                "ResourceUnavailable.Attached",
                format!("The disk `{id}` is {}.", d.state),
            ));
        }
        if d.zone != zone {
            return Err(ApiError::new(
                "ResourceUnavailable.ZoneNotMatch",
                format!("The disk `{id}` is not in `{zone}`."),
            ));
        }
    }
    let now = st.tick;
    for id in ids {
        if let Some(d) = st.disks.get_mut(&id) {
            d.state = "ATTACHING".into();
            d.instance = Some(inst_id.to_string());
            d.changed_at = now;
        }
    }
    Ok(json!({}))
}

/// DetachDisks, https://www.tencentcloud.com/document/api/362/16316:
/// DiskIds; attached disks go DETACHING → UNATTACHED.
fn detach_disks(st: &mut State, region: &str, p: &Value) -> R {
    let ids = disk_ids(st, region, p)?;
    for id in &ids {
        if st.disks[id].state != "ATTACHED" {
            return Err(ApiError::new(
                "ResourceUnavailable.NotSupported",
                format!("The disk `{id}` is not attached."),
            ));
        }
    }
    let now = st.tick;
    for id in ids {
        if let Some(d) = st.disks.get_mut(&id) {
            d.state = "DETACHING".into();
            d.changed_at = now;
        }
    }
    Ok(json!({}))
}

/// TerminateDisks, https://www.tencentcloud.com/document/api/362/16321:
/// DiskIds; only UNATTACHED pay-as-you-go disks.
fn terminate_disks(st: &mut State, region: &str, p: &Value) -> R {
    let ids = disk_ids(st, region, p)?;
    for id in &ids {
        if st.disks[id].state != "UNATTACHED" {
            return Err(ApiError::new(
                "ResourceBusy",
                format!(
                    "The disk `{id}` is {}; detach it first.",
                    st.disks[id].state
                ),
            ));
        }
    }
    for id in ids {
        st.disks.remove(&id);
    }
    Ok(json!({}))
}

/// ResizeDisk, https://www.tencentcloud.com/document/api/362/16320:
/// DiskId, DiskSize (larger than now).
fn resize_disk(st: &mut State, region: &str, p: &Value) -> R {
    let id = req_str(p, "DiskId")?;
    let size = opt_int(p, "DiskSize")?.ok_or_else(|| missing("DiskSize"))?;
    let d = st
        .disks
        .get_mut(id)
        .filter(|d| d.region == region)
        .ok_or_else(|| {
            ApiError::new(
                "InvalidDiskId.NotFound",
                format!("The disk `{id}` does not exist."),
            )
        })?;
    if size <= d.size || size > 32_000 {
        return Err(ApiError::new(
            "InvalidParameterValue.Range",
            format!("The new size must be larger than {} GB.", d.size),
        ));
    }
    d.size = size;
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        let vpc = parse_cidr("10.0.0.0/16").unwrap();
        assert!(cidr_contains(vpc, parse_cidr("10.0.1.0/24").unwrap()));
        assert!(!cidr_contains(vpc, parse_cidr("10.1.0.0/24").unwrap()));
        assert!(parse_cidr("10.0.0.1/16").is_none());
        assert!(cidr_overlaps(
            parse_cidr("10.0.0.0/23").unwrap(),
            parse_cidr("10.0.1.0/24").unwrap()
        ));
    }

    /// 651/13354: keys 1-127, values 1-255 characters of letters, digits,
    /// inner spaces and `+ - = . _ : / @ ( ) [ ] , ; > <`.
    #[test]
    fn tag_rules() {
        let tags = |k: &str, v: &str| parse_tags(Some(&json!([{"Key": k, "Value": v}])), "Tags");
        assert!(tags("team", "研发 (a) [b] x+y=z/w@v.u_t:s,r;q>p<").is_ok());
        for (k, v) in [
            ("team", ""),
            ("team", "r&d"),
            ("team", " lead"),
            ("qcs:x", "v"),
            ("project:x", "v"),
        ] {
            assert!(tags(k, v).is_err(), "{k}={v}");
        }
        assert!(tags(&"k".repeat(128), "v").is_err());
        assert!(tags("k", &"v".repeat(256)).is_err());
    }

    #[test]
    fn base64_check() {
        assert!(is_base64("aGVsbG8="));
        assert!(!is_base64("hello!"));
    }
}
