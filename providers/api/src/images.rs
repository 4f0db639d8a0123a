//! Image ids resolved from logical names (`ubuntu-22.04-cuda`), kept per
//! provider so that each name is looked up once per region.

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
