//! Image ids resolved from logical names (`ubuntu-22.04-cuda`), kept per
//! provider so that each name is looked up once per region.

use gpuform_catalog::Cloud;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

/// Resolved image ids by (region, logical name).
#[derive(Debug, Default)]
pub struct ImageCache(Mutex<HashMap<(String, String), String>>);

impl ImageCache {
    pub fn new() -> ImageCache {
        ImageCache::default()
    }

    /// The id of `name` in `region`: from the cache, or from `look_up`,
    /// whose answer is kept (an error is not, so a later call asks again).
    pub async fn resolve<E, F, Fut>(
        &self,
        region: &str,
        name: &str,
        look_up: F,
    ) -> Result<String, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, E>>,
    {
        let key = (region.to_string(), name.to_string());
        if let Some(id) = self.lock().get(&key) {
            return Ok(id.clone());
        }
        let id = look_up().await?;
        self.lock().insert(key, id.clone());
        Ok(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), String>> {
        // A panic elsewhere while holding the lock leaves a map that is still
        // valid: every entry is inserted whole.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn looks_up_once_per_region_and_not_after_an_error() {
        let cache = ImageCache::new();
        let calls = std::cell::Cell::new(0);
        let look_up = |id: &'static str| {
            let calls = &calls;
            move || {
                calls.set(calls.get() + 1);
                async move { Ok::<_, String>(id.to_string()) }
            }
        };
        assert_eq!(
            block_on(cache.resolve("r1", "u", look_up("a"))),
            Ok("a".into())
        );
        assert_eq!(
            block_on(cache.resolve("r1", "u", look_up("b"))),
            Ok("a".into())
        );
        assert_eq!(
            block_on(cache.resolve("r2", "u", look_up("c"))),
            Ok("c".into())
        );
        assert_eq!(calls.get(), 2);
        let failed =
            block_on(cache.resolve("r3", "u", || async { Err::<String, _>("down".to_string()) }));
        assert_eq!(failed, Err("down".to_string()));
        assert_eq!(
            block_on(cache.resolve("r3", "u", look_up("d"))),
            Ok("d".into())
        );
        assert_eq!(calls.get(), 3);
    }
}

/// Whether `image` is `cloud`'s own image id, used as it is, rather than a
/// logical name (`ubuntu-22.04-cuda`) that gpuform looks up on that cloud.
/// The one answer the cloud crates (before a lookup) and the portability
/// commands (an id that cannot follow a cluster to another cloud) share.
pub fn is_raw_image_id(cloud: Cloud, image: &str) -> bool {
    match cloud {
        // `ami-` and 8 or 17 hex digits.
        Cloud::Aws => image
            .strip_prefix("ami-")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit())),
        // A custom or shared image `m-…`, or a public image id
        // (`ubuntu_22_04_x64_20G_alibase_20240130.vhd`).
        Cloud::Alibaba => image.starts_with("m-") || image.ends_with(".vhd"),
        // `img-` and the id (public and custom images alike).
        Cloud::Tencent => image.starts_with("img-") && image.len() > 4,
        // IMS image ids are UUIDs.
        Cloud::Huawei => {
            let parts: Vec<&str> = image.split('-').collect();
            parts.len() == 5
                && [8, 4, 4, 4, 12]
                    .iter()
                    .zip(&parts)
                    .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
        }
    }
}

/// Whether `image` is some cloud's own image id (for a spec whose cloud is
/// `any`, or not yet known).
pub fn is_raw_image_id_on_any(image: &str) -> bool {
    Cloud::ALL.iter().any(|c| is_raw_image_id(*c, image))
}

#[cfg(test)]
mod raw_id_tests {
    use super::*;

    #[test]
    fn each_cloud_knows_its_own_image_ids_and_no_logical_name() {
        let ids = [
            (Cloud::Aws, "ami-03c3da4cfa8e8943a"),
            (Cloud::Aws, "ami-1e749f67"),
            (Cloud::Alibaba, "m-bp1abc"),
            (Cloud::Alibaba, "ubuntu_22_04_x64_20G_alibase_20240130.vhd"),
            (Cloud::Tencent, "img-487zeit5"),
            (Cloud::Huawei, "0a1b2c3d-0000-1111-2222-333344445555"),
        ];
        for (cloud, id) in ids {
            assert!(is_raw_image_id(cloud, id), "{cloud} {id}");
            assert!(is_raw_image_id_on_any(id), "{id}");
            for other in Cloud::ALL.into_iter().filter(|c| *c != cloud) {
                assert!(!is_raw_image_id(other, id), "{id} is not {other}'s");
            }
        }
        for name in [
            "ubuntu-22.04-cuda",
            "ubuntu-24.04",
            "ami-",
            "ami-xyz",
            "img-",
            "m",
        ] {
            assert!(!is_raw_image_id_on_any(name), "{name} is a logical name");
        }
    }
}
