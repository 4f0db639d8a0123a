//! The capacity stand-in (`gpuform_standins::aws_capacity`) in front of the
//! tests' moto: Service Quotas' EC2 GPU quotas answered by the stand-in,
//! everything else forwarded to moto. A test starts one per test (its
//! quota values are its own), gives gpuform its endpoint in place of
//! moto's, and sets what the account's quotas say.

use super::Account;
pub use gpuform_standins::aws_capacity::quotas;
pub use gpuform_standins::aws_capacity::AwsCapacity;

/// A stand-in in front of `moto_url` that also accepts the keys of
/// `accounts` (moto accounts of [`super::fresh_accounts`]).
pub fn in_front_of(moto_url: &str, accounts: &[&Account]) -> AwsCapacity {
    let standin = AwsCapacity::start(moto_url);
    for a in accounts {
        standin.add_key(&a.access_key_id, &a.secret_access_key);
    }
    standin
}
