//! Refresh on moto: a lost create found again by its tags, and 200
//! instances refreshed in a handful of calls.

use crate::common;

use common::*;
use gpuform_provider::{Provider, ResourceKind};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// Crash adoption: the create happened, its answer was lost; the ownership
/// tags (address + token) find it again. moto does not honour ClientToken,
/// so this is what adoption relies on there.
#[tokio::test]
async fn lost_create_result_is_adopted_by_tags() {
    let p = provider().await;
    let project = unique_project("adopt");
    let net = network(&p, &project).await;
    let r = req(
        ResourceKind::Instance,
        &project,
        "cluster.trainer.node[7]",
        json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023"}),
        &[("subnet", &net.subnet), ("firewall", &net.sg)],
    );
    let token = r.ownership.token.clone();
    let created = create(&p, &r).await;
    let lost_id = created.id.clone();
    drop(created); // the journal never saw the id

    // The next run, with a fresh provider (a new process).
    let p2 = provider().await;
    let owned = p2.list_owned(&scope(), &project).await.unwrap();
    let found: Vec<_> = owned
        .iter()
        .filter(|o| {
            o.kind == ResourceKind::Instance
                && o.ownership
                    .as_ref()
                    .map(|t| (t.address.as_str(), t.token.as_str()))
                    == Some(("cluster.trainer.node[7]", token.as_str()))
        })
        .collect();
    assert_eq!(found.len(), 1, "{owned:#?}");
    assert_eq!(found[0].id, lost_id);

    delete_all(&p, &[(ResourceKind::Instance, &lost_id)]).await;
    delete_network(&p, &net).await;
}

#[tokio::test]
async fn refreshing_200_instances_costs_a_handful_of_calls() {
    const N: usize = 200;
    let p = Arc::new(provider().await);
    let project = unique_project("refresh200");
    let net = network(&p, &project).await;

    // Launch 200 nodes straight at moto (not counted), 16 at a time.
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut set = tokio::task::JoinSet::new();
    for n in 0..N {
        let a =
            json!({"instance_type": "g4dn.xlarge", "image": "amazon-linux-2023", "root_gb": 100});
        let r = node(&net, &project, &format!("cluster.big.node[{n}]"), a);
        let (p, sem) = (p.clone(), sem.clone());
        set.spawn(async move {
            let _permit = sem.acquire().await.unwrap();
            create(&p, &r).await.id
        });
    }
    let mut ids = Vec::new();
    while let Some(id) = set.join_next().await {
        ids.push(id.unwrap());
    }
    assert_eq!(ids.len(), N);

    // Refresh through the counting proxy, with a fresh provider.
    let proxy = CountingProxy::start(&moto_url()).await;
    let counted = provider_at(&proxy.url).await;
    let owned = counted.list_owned(&scope(), &project).await.unwrap();
    assert_eq!(by_kind(&owned, ResourceKind::Instance).len(), N);
    assert!(by_kind(&owned, ResourceKind::Instance)
        .iter()
        .all(|r| r.attrs["root_gb"] == json!(100)));
    let list = format!("list_owned of {N} instances (+ network, subnet, firewall)");
    assert_a_handful(&list, &proxy.snapshot(), 8);

    proxy.reset();
    let read = counted
        .read(&scope(), ResourceKind::Instance, &ids)
        .await
        .unwrap();
    assert_eq!(read.len(), N);
    assert_a_handful(&format!("read of {N} instance ids"), &proxy.snapshot(), 4);

    // Clean up in one call.
    let ec2 = raw_client(&p).await;
    ec2.terminate_instances()
        .set_instance_ids(Some(ids))
        .send()
        .await
        .unwrap();
    delete_network(&p, &net).await;
}

/// Asserts that `what` made at most one DescribeInstances and at most
/// `most` requests in all (`counts`: requests by action).
fn assert_a_handful(what: &str, counts: &HashMap<String, u32>, most: u32) {
    let total: u32 = counts.values().sum();
    println!("{what}: {total} requests: {counts:?}");
    let describes = counts.get("DescribeInstances").copied().unwrap_or(0);
    assert!(describes <= 1, "{what}: {counts:?}");
    assert!(
        total <= most,
        "{what} must cost a handful of calls, not {total}: {counts:?}"
    );
}
