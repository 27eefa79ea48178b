//! A PostgreSQL bank behind a connection cut in the middle of a batch, by a loopback proxy
//! ([`CutProxy`]) that cuts at a point of the protocol: in the middle of the batch's rows, just
//! before its `COMMIT` reaches the server, or just after the server committed it with the answer
//! lost. Each time the batch is retried exactly once or reported, never half-applied, never
//! applied twice: the rows are counted, and the proxy counts the `COMMIT`s the server completed.

use crate::common;

use std::ops::ControlFlow;

use common::pg::PgServer;
use common::proxy::{server_addr, Cut, CutProxy};
use common::{entries, key, op_record, Owned};
use tunebank::bank::store::{PgStore, Store};

const UPSERT: &str = "INSERT INTO tunebank_records";

fn batch(tag: &str, n: u64) -> Vec<Owned> {
    (0..n)
        .map(|i| {
            Owned::new(
                key(&format!("{tag}/{i}")),
                &op_record("Ascend910B2", "MatMul", i, 0, n),
            )
        })
        .collect()
}

/// How many records of `batch` the bank holds, each byte for byte.
fn held(store: &PgStore, batch: &[Owned]) -> usize {
    batch
        .iter()
        .filter(|o| {
            let mut got = None;
            store
                .get_with(&o.key, &mut |v| got = Some(v.to_vec()))
                .unwrap();
            got.inspect(|v| assert_eq!(v, &o.value)).is_some()
        })
        .count()
}

fn count(store: &PgStore) -> usize {
    let mut n = 0;
    store
        .scan(&mut |_, _| {
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    n
}

/// A server with the bank schema, a proxy in front of it, and a bank handle through the proxy
/// with one batch written (so that its connection is pooled), plus a handle straight to the
/// server for the checks.
fn setup() -> Option<(PgServer, CutProxy, PgStore, PgStore)> {
    let (server, url) = PgServer::database()?;
    common::pg::init_schema(&url);
    let proxy = CutProxy::start(server_addr(&url));
    let store = PgStore::open(&format!("{}#op/Ascend910B2", proxy.url(&url))).unwrap();
    let direct = PgStore::open(&format!("{url}#op/Ascend910B2")).unwrap();
    let warm = batch("warm", 3);
    store.put_batch(&entries(&warm)).unwrap();
    assert_eq!(held(&direct, &warm), 3);
    Some((server, proxy, store, direct))
}

/// Cut in the middle of the batch's rows: the server never had the whole statement and aborts;
/// the handle reconnects and runs the batch once more: it is there once, committed once.
#[test]
fn a_batch_cut_in_its_rows_is_run_once_more_and_applied_once() {
    let Some((_server, proxy, store, direct)) = setup() else {
        return;
    };
    let before = (proxy.commits(), store.connections());
    let rows = batch("rows", 400);
    proxy.arm(Cut::MidBind(UPSERT));
    store.put_batch(&entries(&rows)).unwrap();
    assert_eq!(proxy.struck(), vec![Cut::MidBind(UPSERT)]);
    let after = store.connections();
    assert_eq!(
        after.opened - before.1.opened,
        1,
        "retried on exactly one new connection"
    );
    assert_eq!(after.lost - before.1.lost, 1);
    assert_eq!(proxy.commits() - before.0, 1, "committed exactly once");
    assert_eq!(held(&direct, &rows), rows.len());
    assert_eq!(count(&direct), 3 + rows.len());
}

/// Cut with the `COMMIT` on its way: the server never sees it and aborts; the handle asks the
/// server what became of the transaction (aborted) and runs the batch once more.
#[test]
fn a_batch_whose_commit_never_arrives_is_run_once_more_and_applied_once() {
    let Some((_server, proxy, store, direct)) = setup() else {
        return;
    };
    let commits = proxy.commits();
    let rows = batch("before", 300);
    proxy.arm(Cut::BeforeCommit);
    store.put_batch(&entries(&rows)).unwrap();
    assert_eq!(proxy.struck(), vec![Cut::BeforeCommit]);
    assert_eq!(proxy.commits() - commits, 1, "committed exactly once");
    assert_eq!(held(&direct, &rows), rows.len());
    assert_eq!(count(&direct), 3 + rows.len());
}

/// Cut after the server committed, the answer lost: the handle asks the server (committed) and
/// acknowledges the batch without running it again: one `COMMIT`, as for an uncut batch. A
/// handle that simply ran the batch again on a new connection would commit it twice.
#[test]
fn a_batch_committed_with_its_answer_lost_is_acknowledged_not_applied_twice() {
    let Some((_server, proxy, store, direct)) = setup() else {
        return;
    };
    let commits = proxy.commits();
    let rows = batch("after", 300);
    proxy.arm(Cut::AfterCommit);
    store.put_batch(&entries(&rows)).unwrap();
    assert_eq!(proxy.struck(), vec![Cut::AfterCommit]);
    assert_eq!(
        proxy.commits() - commits,
        1,
        "the batch was committed more than once"
    );
    assert_eq!(held(&direct, &rows), rows.len());
    // The conditional write (the bank's tuning path) settles the same way: it reports what it
    // wrote in the commit the server made, not 0 from a second run that found its own rows.
    let more = batch("after-if", 50);
    proxy.arm(Cut::AfterCommit);
    let written = store.put_batch_if(&entries(&more), &|_, _| true).unwrap();
    assert_eq!(written, more.len());
    assert_eq!(proxy.commits() - commits, 2);
    assert_eq!(count(&direct), 3 + rows.len() + more.len());
}

/// Cut again on the new connection the retry opened: the retry is not retried (a server that
/// drops every connection is not one to loop on) but reported, naming the server, with nothing
/// of the batch in the bank; the next batch goes through.
#[test]
fn a_batch_cut_again_on_its_retry_is_reported_and_absent() {
    let Some((_server, proxy, store, direct)) = setup() else {
        return;
    };
    let rows = batch("twice", 200);
    proxy.arm(Cut::MidBind(UPSERT));
    proxy.arm(Cut::MidBind(UPSERT));
    let err = store.put_batch(&entries(&rows)).unwrap_err();
    assert_eq!(proxy.struck().len(), 2, "the retry ran once, and only once");
    let text = err.to_string();
    assert!(
        text.contains("bank server"),
        "the error names the server: {text}"
    );
    assert_eq!(held(&direct, &rows), 0, "a reported batch left rows behind");
    store.put_batch(&entries(&rows)).unwrap();
    assert_eq!(held(&direct, &rows), rows.len());
    assert_eq!(count(&direct), 3 + rows.len());
}
