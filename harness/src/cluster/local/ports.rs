//! Free loopback ports, picked at start so clusters never collide.

use std::net::TcpListener;

use anyhow::{Context, Result};

/// `n` distinct free ports on 127.0.0.1. All listeners are held until every
/// port is picked, so the kernel cannot hand out one port twice.
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").context("binding a free loopback port"))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ports_are_distinct_and_bindable() {
        let ports = free_ports(12).unwrap();
        let set: BTreeSet<_> = ports.iter().collect();
        assert_eq!(set.len(), 12);
        for p in ports {
            assert!(p > 0);
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
}
