//! The clouds a refresh command (`prices refresh`, `catalog refresh`) asks,
//! each through its API opened with the user's credentials: a cloud named
//! with `--cloud` must have them; without `--cloud`, a cloud without them
//! is skipped and said so.

use super::out::errln;
use super::Failure;
use gpuform_catalog::Cloud;
use gpuform_provider::{ErrorKind, ProviderError};
use std::future::Future;
use std::sync::Arc;

/// What to set for a cloud's credentials, when its provider says they are missing.
pub(super) fn credentials_hint(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Aws => {
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), as for the aws CLI"
        }
        Cloud::Alibaba => "set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        Cloud::Tencent => "set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY",
        Cloud::Huawei => {
            "set HUAWEICLOUD_SDK_AK, HUAWEICLOUD_SDK_SK and HUAWEICLOUD_SDK_PROJECT_ID"
        }
    }
}

/// Opens `open(cloud)` for each of `clouds`. `explicit` (the user named
/// them): a cloud without credentials is an error with the variables to
/// set; otherwise it is skipped (said unless `quiet`). None left: an error
/// naming `command`'s help.
pub(super) async fn apis_with_credentials<A, F, Fut>(
    clouds: Vec<Cloud>,
    explicit: bool,
    quiet: bool,
    command: &str,
    open: F,
) -> Result<Vec<(Cloud, Arc<A>)>, Failure>
where
    A: ?Sized,
    F: Fn(Cloud) -> Fut,
    Fut: Future<Output = Result<Arc<A>, ProviderError>>,
{
    let mut apis = Vec::new();
    for cloud in clouds {
        match open(cloud).await {
            Ok(api) => apis.push((cloud, api)),
            Err(e) if e.kind == ErrorKind::Auth && !explicit => {
                if !quiet {
                    errln!("skipping {cloud}: {}", e.message);
                }
            }
            Err(e) if e.kind == ErrorKind::Auth => {
                return Err(Failure(format!(
                    "{cloud}: {e}\n  hint: {}",
                    credentials_hint(cloud)
                )))
            }
            Err(e) => return Err(Failure(format!("{cloud}: {e}"))),
        }
    }
    if apis.is_empty() {
        return Err(Failure(format!(
            "no cloud has credentials set: nothing to refresh\n  hint: set a cloud's credentials (see `gpuform {command} --help`) or name one with --cloud"
        )));
    }
    Ok(apis)
}
