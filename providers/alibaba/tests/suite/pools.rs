//! Private pools as reservations (issue 31): the provider reads elasticity
//! assurances and capacity reservations from the stand-in
//! (DescribeElasticityAssurances / DescribeCapacityReservations), by id and
//! by tags, page by page.

use crate::common::*;
use gpuform_provider::{Provider, ReservationFilter};
use gpuform_standins::alibaba::{AlibabaMock, PoolKind, PoolSpec};
use std::collections::BTreeMap;

const TYPE: &str = "ecs.gn7i-c8g1.2xlarge";

fn tagged(kind: PoolKind, team: &str) -> PoolSpec {
    PoolSpec {
        kind,
        tags: vec![("team".into(), team.into())],
        ..PoolSpec::active(REGION, "cn-hangzhou-h", TYPE, 2)
    }
}

#[tokio::test]
async fn pools_are_read_by_id_and_by_tags_across_pages() {
    let mock = AlibabaMock::start();
    let p = provider(&mock);
    let eap = mock.create_pool(tagged(PoolKind::ElasticityAssurance, "ml"));
    let crp = mock.create_pool(tagged(PoolKind::CapacityReservation, "ml"));
    let _web = mock.create_pool(tagged(PoolKind::ElasticityAssurance, "web"));
    // More capacity reservations than one page (MaxResults 100) holds.
    let mut many: Vec<String> = (0..104)
        .map(|_| mock.create_pool(tagged(PoolKind::CapacityReservation, "bulk")))
        .collect();

    let by_id = p
        .reservations(&scope(), &ReservationFilter::Id(crp.clone()))
        .await
        .unwrap();
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].id, crp);
    assert_eq!((by_id[0].total, by_id[0].available), (2, 2));
    assert!(by_id[0].is_active() && by_id[0].targeted);
    assert_eq!(by_id[0].zone, "cn-hangzhou-h");
    assert_eq!(by_id[0].instance_type, TYPE);
    let eap_by_id = p
        .reservations(&scope(), &ReservationFilter::Id(eap.clone()))
        .await
        .unwrap();
    assert_eq!(eap_by_id.len(), 1);
    assert_eq!(eap_by_id[0].id, eap);
    // An id no pool has: nothing, not an error.
    let none = p
        .reservations(
            &scope(),
            &ReservationFilter::Id("eap-bpnosuchpool0000000".into()),
        )
        .await
        .unwrap();
    assert!(none.is_empty());

    let ml = BTreeMap::from([("team".to_string(), "ml".to_string())]);
    let mut found: Vec<String> = p
        .reservations(&scope(), &ReservationFilter::Tags(ml))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    found.sort();
    let mut want = vec![eap, crp];
    want.sort();
    assert_eq!(found, want, "both kinds, only this team's");

    let bulk = BTreeMap::from([("team".to_string(), "bulk".to_string())]);
    let mut found: Vec<String> = p
        .reservations(&scope(), &ReservationFilter::Tags(bulk))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    found.sort();
    many.sort();
    assert_eq!(found, many, "every page");
}
