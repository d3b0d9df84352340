//! Free loopback ports, picked at start so clusters never collide.
//!
//! They come from below the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`), where outgoing connections
//! never take them: a port asked of the kernel with `:0` is an ephemeral
//! one, and between picking it and a component binding it another
//! cluster's client could connect from it (seen with six clusters
//! starting at once: a JobSet controller that could not serve). The search
//! starts at a place of its own per process, and a process never hands
//! out one port twice.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

use anyhow::{Result, bail};

/// The lowest port handed out.
const LOW: u16 = 10_000;

/// Ports this process handed out already.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// `n` distinct free ports on 127.0.0.1. All listeners are held until every
/// port is picked, so no port is counted twice.
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let high = ephemeral_low().saturating_sub(1).max(LOW + 1_000);
    let span = u32::from(high - LOW) + 1;
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let start = seed() % span;
    let mut listeners = Vec::with_capacity(n);
    for i in 0..span {
        if listeners.len() == n {
            break;
        }
        let port = LOW + ((start + i) % span) as u16;
        if handed.contains(&port) {
            continue;
        }
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            listeners.push(l);
        }
    }
    if listeners.len() < n {
        bail!(
            "only {} of {n} loopback ports between {LOW} and {high} are free",
            listeners.len()
        );
    }
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?;
    handed.extend(&ports);
    Ok(ports)
}

/// The first port of the kernel's ephemeral range (32768 when unreadable,
/// Linux's default).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Where this process's search starts: from its pid and the clock, so two
/// harness processes starting at once look in different places.
fn seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let ports = free_ports(12).unwrap();
        let set: BTreeSet<_> = ports.iter().collect();
        assert_eq!(set.len(), 12);
        let low = ephemeral_low();
        for p in ports {
            assert!((LOW..low).contains(&p), "port {p} outside {LOW}..{low}");
            // A test forking a process in parallel can hold a copy of the
            // listener for the instant between fork and exec: retry briefly.
            let bound = (0..50).any(|_| {
                TcpListener::bind(("127.0.0.1", p)).is_ok() || {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    false
                }
            });
            assert!(bound, "port {p} is free after allocation");
        }
    }

    #[test]
    fn a_process_never_hands_out_a_port_twice() {
        let a: BTreeSet<u16> = free_ports(20).unwrap().into_iter().collect();
        let b: BTreeSet<u16> = free_ports(20).unwrap().into_iter().collect();
        assert!(
            a.is_disjoint(&b),
            "{:?}",
            a.intersection(&b).collect::<Vec<_>>()
        );
    }
}
