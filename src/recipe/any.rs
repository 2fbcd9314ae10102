//! One type over every system's recipe, so the runner can hold clients of any system; connecting
//! one asks the cluster's service ([`crate::service::connect`], through its
//! [`crate::service::LockService::connect`]) with what it needs from a started cluster, or from
//! its `ConnectInfo` in a worker process.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use super::{Claim, Lease, LockError, Recipe, Strategy, Tally};
use crate::system::System;

/// How long connecting one client may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Recipe`] as a trait object: its futures boxed, `crash` taking the box.
trait DynRecipe: Send + Sync {
    fn system(&self) -> System;
    fn strategies(&self) -> &'static [Strategy];
    fn acquire_claim<'a>(
        &'a self,
        key: &'a str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &'a Tally,
    ) -> Boxed<'a, Result<Lease, LockError>>;
    fn release(&self, lease: Lease) -> Boxed<'_, Result<(), LockError>>;
    fn crash(self: Box<Self>) -> Boxed<'static, ()>;
    fn close(self: Box<Self>) -> Boxed<'static, ()>;
}

impl<R: Recipe> DynRecipe for R {
    fn system(&self) -> System {
        Recipe::system(self)
    }
    fn strategies(&self) -> &'static [Strategy] {
        Recipe::strategies(self)
    }
    fn acquire_claim<'a>(
        &'a self,
        key: &'a str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &'a Tally,
    ) -> Boxed<'a, Result<Lease, LockError>> {
        Box::pin(Recipe::acquire_claim(
            self, key, strategy, claim, deadline, tally,
        ))
    }
    fn release(&self, lease: Lease) -> Boxed<'_, Result<(), LockError>> {
        Box::pin(Recipe::release(self, lease))
    }
    fn crash(self: Box<Self>) -> Boxed<'static, ()> {
        Box::pin(Recipe::crash(*self))
    }
    fn close(self: Box<Self>) -> Boxed<'static, ()> {
        Box::pin(Recipe::close(*self))
    }
}

/// A lock client of whichever system the cluster runs. Each acquire and release boxes its
/// future once (a trait object cannot name it); the calls themselves already allocate (keys,
/// requests), so this adds one small allocation to each.
pub struct AnyRecipe(Box<dyn DynRecipe>);

impl AnyRecipe {
    /// Wraps one system's recipe (what a [`crate::service::LockService::connect`] returns).
    pub fn new(recipe: impl Recipe) -> AnyRecipe {
        AnyRecipe(Box::new(recipe))
    }
}

impl Recipe for AnyRecipe {
    fn system(&self) -> System {
        self.0.system()
    }

    fn strategies(&self) -> &'static [Strategy] {
        self.0.strategies()
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        self.0
            .acquire_claim(key, strategy, claim, deadline, tally)
            .await
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        super::inject::before_release(self.0.system()).await;
        self.0.release(lease).await
    }

    async fn crash(self) {
        self.0.crash().await
    }

    async fn close(self) {
        self.0.close().await
    }
}
