//! Per-client rate limiting: a token bucket per client IP.
//!
//! The client is the TCP peer. `X-Forwarded-For` is believed only when the
//! peer is a configured trusted proxy; then the client is the rightmost
//! address in the header that is not itself a trusted proxy (entries to its
//! left could be forged by the client). Over the limit a request gets 429
//! with `Retry-After` (whole seconds until a token is available).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use axum::http::HeaderMap;

/// Buckets kept in all; each of the [`SHARDS`] maps holds at most its share.
const MAX_TRACKED: usize = 16_384;
/// Independent maps (by address hash), each behind its own lock.
const SHARDS: usize = 16;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Token buckets by client address.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    trusted: Vec<IpAddr>,
    shards: Vec<Mutex<HashMap<IpAddr, Bucket>>>,
    /// Picks an address's shard (randomly seeded: clients cannot aim at one).
    hasher: std::collections::hash_map::RandomState,
}

impl RateLimiter {
    /// `per_second` sustained (0 disables), `burst` bucket size.
    pub fn new(per_second: f64, burst: u32, trusted: Vec<IpAddr>) -> Self {
        RateLimiter {
            per_second,
            burst: f64::from(burst.max(1)),
            trusted,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }

    /// The client a request comes from.
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?;
        if !self.trusted.contains(&peer) {
            return Some(peer);
        }
        let mut client = peer;
        // Every X-Forwarded-For header, in order, as one comma-separated list.
        let hops: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        for hop in hops.into_iter().rev() {
            client = hop;
            if !self.trusted.contains(&hop) {
                break;
            }
        }
        Some(client)
    }

    /// Makes room in a full shard: drops the buckets that have refilled
    /// (forgetting them changes nothing), and if that frees less than a
    /// quarter, the least recently used half. Either way at least a quarter
    /// of the shard is free afterwards, so the O(n) pass runs at most once
    /// per n/4 new addresses: amortized O(1) under any address churn.
    fn shrink(&self, map: &mut HashMap<IpAddr, Bucket>, now: Instant) {
        let cap = MAX_TRACKED / SHARDS;
        let (rate, burst) = (self.per_second, self.burst);
        map.retain(|_, b| {
            b.tokens + now.saturating_duration_since(b.last).as_secs_f64() * rate < burst
        });
        if map.len() > cap - cap / 4 {
            let mut lasts: Vec<Instant> = map.values().map(|b| b.last).collect();
            let mid = lasts.len() / 2;
            let (_, median, _) = lasts.select_nth_unstable(mid);
            let median = *median;
            map.retain(|_, b| b.last > median);
        }
    }

    /// Buckets tracked now, over every shard.
    pub fn tracked(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Takes a token for `client`; `Err(seconds)` to wait when there is none.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), u64> {
        if self.per_second <= 0.0 {
            return Ok(());
        }
        let shard = {
            use std::hash::BuildHasher;
            (self.hasher.hash_one(client) as usize) % SHARDS
        };
        let mut map = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_TRACKED / SHARDS && !map.contains_key(&client) {
            self.shrink(&mut map, now);
        }
        let b = map.entry(client).or_insert(Bucket {
            tokens: self.burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.per_second).min(self.burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - b.tokens) / self.per_second;
            Err((wait.ceil() as u64).max(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::time::Duration;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn bucket_empties_and_refills() {
        let l = RateLimiter::new(2.0, 3, vec![]);
        let t0 = Instant::now();
        let c = ip("10.0.0.1");
        for _ in 0..3 {
            assert!(l.take(c, t0).is_ok());
        }
        assert_eq!(l.take(c, t0), Err(1));
        // Another client has its own bucket.
        assert!(l.take(ip("10.0.0.2"), t0).is_ok());
        // Half a second refills one token at 2/s.
        assert!(l.take(c, t0 + Duration::from_millis(500)).is_ok());
        assert!(l.take(c, t0 + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn address_churn_keeps_the_map_bounded() {
        let l = RateLimiter::new(0.001, 5, vec![]);
        let t0 = Instant::now();
        for i in 0..100_000u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            // Each new address drains a token: nothing refills in time.
            assert!(l.take(ip, t0 + Duration::from_micros(u64::from(i))).is_ok());
        }
        assert!(l.tracked() <= MAX_TRACKED, "{}", l.tracked());
        assert!(l.tracked() > MAX_TRACKED / 4, "{}", l.tracked());
    }

    #[test]
    fn forwarded_for_is_trusted_only_from_proxies() {
        let l = RateLimiter::new(1.0, 1, vec![ip("10.0.0.9")]);
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 1.2.3.4"),
        );
        // Untrusted peer: the header is ignored.
        assert_eq!(l.client(Some(ip("5.5.5.5")), &h), Some(ip("5.5.5.5")));
        // Trusted proxy: the rightmost untrusted hop.
        assert_eq!(l.client(Some(ip("10.0.0.9")), &h), Some(ip("1.2.3.4")));
    }
}
