//! Lost updates on hand-made register histories; counts worked out by hand in the comments.

use super::*;
use crate::check::testkit::*;
use crate::history::Event;

/// Clients 0 (token 1) and 1 (token 2) both read 0; client 1 writes 1, then client 0 writes 1
/// (`stale` decides whether the fenced register refuses it); client 2 (token 3) reads 1,
/// writes 2.
fn two_read_the_same(stale: bool) -> Vec<Event> {
    let late = if stale {
        stale_write(50, 0, "k", 1, 1)
    } else {
        write(50, 0, "k", 1, 1)
    };
    vec![
        read(20, 0, "k", 1, 0),  // line 1
        read(30, 1, "k", 2, 0),  // line 2
        write(40, 1, "k", 2, 1), // line 3
        late,                    // line 4
        read(60, 2, "k", 3, 1),  // line 5
        write(70, 2, "k", 3, 2), // line 6
    ]
}

#[test]
fn unfenced_two_writes_of_the_same_value_lose_an_update() {
    // 3 accepted writes, the register went 0 → 2: one update lost.
    let v = run(&LostUpdate, two_read_the_same(false));
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(
        (count(&v, LOST_UPDATES), count(&v, ACCEPTED_WRITES)),
        (1, 3)
    );
    assert_eq!(v.evidence.len(), 1);
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(SAME_VALUE));
    assert_eq!(
        (&e.clients[..], &e.tokens[..], &e.t_us[..]),
        (&[1, 0][..], &[2, 1][..], &[40, 50][..])
    );
    // Both writes and the reads they followed.
    assert_eq!(e.lines, [1, 2, 3, 4]);
    assert!(
        e.what
            .contains("client 1 (token 2) wrote 1 at 40 µs after reading 0 at 30 µs")
            && e.what
                .contains("client 0 (token 1) wrote 1 again at 50 µs after reading 0 at 20 µs"),
        "{}",
        e.what
    );
}

#[test]
fn a_refused_stale_write_loses_nothing() {
    // 2 accepted writes (the refused one changed nothing), the register went 0 → 2.
    let v = run(&LostUpdate, two_read_the_same(true));
    assert_eq!(v.validity, SafetyVerdict::Safe);
    assert_eq!(
        (count(&v, LOST_UPDATES), count(&v, ACCEPTED_WRITES)),
        (0, 2)
    );
    assert!(v.evidence.is_empty());
}

#[test]
fn a_register_that_did_not_start_at_zero_starts_at_its_first_read() {
    // First access reads 7; two sections write 8 and 9: 2 writes, increase 2, nothing lost.
    let h = vec![
        read(10, 0, "k", 1, 7),
        write(20, 0, "k", 1, 8),
        read(30, 1, "k", 2, 8),
        write(40, 1, "k", 2, 9),
    ];
    let v = run(&LostUpdate, h);
    assert_eq!(
        (v.validity, count(&v, LOST_UPDATES)),
        (SafetyVerdict::Safe, 0)
    );
    // Both read 7 and wrote 8: 2 writes, increase 1 (from 7, not from 0): one lost.
    let h = vec![
        read(10, 0, "k", 1, 7),
        read(15, 1, "k", 2, 7),
        write(20, 0, "k", 1, 8),
        write(40, 1, "k", 2, 8),
    ];
    let v = run(&LostUpdate, h);
    assert_eq!(
        (v.validity, count(&v, LOST_UPDATES)),
        (SafetyVerdict::Unsafe, 1)
    );
}

#[test]
fn overwritten_with_a_smaller_value_without_a_pair_shows_the_keys_totals() {
    // Writes of 2 then 1 from a register at 0: 2 writes, increase 1, one lost, no equal pair.
    let h = vec![
        read(10, 0, "k", 1, 0),
        write(20, 0, "k", 1, 2),
        write(30, 1, "k", 2, 1),
    ];
    let v = run(&LostUpdate, h);
    assert_eq!(count(&v, LOST_UPDATES), 1);
    assert_eq!(v.evidence[0].class.as_deref(), Some(LOST_UPDATES));
    assert_eq!(v.evidence[0].lines, [2, 3]);
}

#[test]
fn keys_are_separate_registers_and_file_order_does_not_matter() {
    // Key a: the unfenced lost update (1 lost); key b: two clean sections (0 lost).
    let mut h = two_read_the_same(false);
    h.extend(section(100, 0, "b", 1, 0));
    h.extend(section(200, 1, "b", 2, 1));
    for e in &mut h[..6] {
        e.key = "a".into();
    }
    let v = run(&LostUpdate, h.clone());
    assert_eq!(
        (count(&v, LOST_UPDATES), count(&v, ACCEPTED_WRITES)),
        (1, 5)
    );
    h.reverse();
    let r = run(&LostUpdate, h);
    assert_eq!(
        (count(&r, LOST_UPDATES), count(&r, ACCEPTED_WRITES)),
        (1, 5)
    );
    assert_eq!(r.evidence[0].t_us, [40, 50]);
}

/// `e` (a register access) on slot `slot` of its key.
fn on_slot(mut e: Event, slot: u64) -> Event {
    e.slot = Some(slot);
    e
}

#[test]
fn a_semaphores_holders_each_increment_a_register_of_their_own() {
    // Two holders of k at once, clients 0 and 1, each read 0 from its own slot and write 1:
    // two registers each raised by one, nothing lost.
    let h = vec![
        on_slot(read(20, 0, "k", 1, 0), 0),
        on_slot(read(30, 1, "k", 2, 0), 1),
        on_slot(write(40, 0, "k", 1, 1), 0),
        on_slot(write(50, 1, "k", 2, 1), 1),
    ];
    let v = run(&LostUpdate, h.clone());
    assert_eq!(v.validity, SafetyVerdict::Safe, "{}", v.summary);
    assert_eq!(
        (count(&v, LOST_UPDATES), count(&v, ACCEPTED_WRITES)),
        (0, 2)
    );
    assert!(
        v.summary.ends_with("over 2 keys (by key and slot)"),
        "{}",
        v.summary
    );
    // The same accesses on one slot: both wrote 1, one increment lost, named by its slot.
    let one: Vec<Event> = h.into_iter().map(|e| on_slot(e, 3)).collect();
    let v = run(&LostUpdate, one);
    assert_eq!(count(&v, LOST_UPDATES), 1);
    let e = &v.evidence[0];
    assert_eq!(e.key.as_deref(), Some("k"));
    assert!(
        e.what
            .starts_with("key k slot 3: client 0 (token 1) wrote 1 at 40 µs after reading 0"),
        "{}",
        e.what
    );
}
