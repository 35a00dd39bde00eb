//! Vector spaces: validation, upsert/delete, filters, and exact search.

use memdb::*;

use crate::{conv, tmp};

fn space(db: &Memdb, name: &str, dim: u32, metric: Metric) -> VectorSpace {
    db.create_vector_space(&SpaceSpec::new(name, dim, metric))
        .unwrap()
}

#[test]
fn spaces_keep_models_apart() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let a = space(&db, "model-a", 3, Metric::Cosine);
    assert_eq!(
        space(&db, "model-a", 3, Metric::Cosine),
        a,
        "re-creating the same space is idempotent"
    );
    let err = db
        .create_vector_space(&SpaceSpec::new("model-a", 4, Metric::Cosine))
        .unwrap_err();
    assert!(
        matches!(err, Error::Conflict(ref m) if m.contains("re-embed")),
        "{err}"
    );
    let err = db
        .create_vector_space(&SpaceSpec::new("model-a", 3, Metric::L2))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)));
    assert!(matches!(
        db.create_vector_space(&SpaceSpec::new("z", 0, Metric::Dot)),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        db.create_vector_space(&SpaceSpec::new("z", 9000, Metric::Dot)),
        Err(Error::InvalidInput { .. })
    ));
    let b = space(&db, "model-b", 4096, Metric::Dot);
    assert_ne!(a.id, b.id);
    assert_eq!(db.vector_spaces().unwrap().len(), 2);
}

#[test]
fn bad_vectors_are_refused_and_write_nothing() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    space(&db, "s", 3, Metric::Cosine);
    let id = uuid::Uuid::new_v4();
    let before = db.check().unwrap().store_lsn;
    let cases: Vec<Vec<f32>> = vec![
        vec![1.0, 2.0],
        vec![1.0, f32::NAN, 0.0],
        vec![f32::INFINITY, 0.0, 0.0],
        vec![0.0, 0.0, 0.0],
    ];
    for v in cases {
        let err = db
            .upsert_vectors("s", &[(uuid::Uuid::new_v4(), vec![1.0, 0.0, 0.0]), (id, v)])
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput { ref field, .. } if field == "vectors[1]"),
            "{err}"
        );
    }
    assert!(matches!(
        db.upsert_vector("nope", id, &[1.0, 0.0, 0.0]),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(db.check().unwrap().store_lsn, before, "nothing was written");
    assert!(db.get_vector("s", id).unwrap().is_none());
    assert!(
        db.search_vectors_exact("s", &[1.0, 0.0, 0.0], 10, &VectorFilter::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn exact_search_metrics_and_deletes() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    for (name, metric) in [
        ("cos", Metric::Cosine),
        ("dot", Metric::Dot),
        ("l2", Metric::L2),
    ] {
        space(&db, name, 2, metric);
        let a = uuid::Uuid::from_u128(1);
        let b = uuid::Uuid::from_u128(2);
        let c = uuid::Uuid::from_u128(3);
        db.upsert_vectors(
            name,
            &[
                (a, vec![1.0, 0.0]),
                (b, vec![10.0, 1.0]),
                (c, vec![0.0, 1.0]),
            ],
        )
        .unwrap();
        let hits = db
            .search_vectors_exact(name, &[1.0, 0.1], 3, &VectorFilter::default())
            .unwrap();
        let order: Vec<_> = hits.iter().map(|h| h.record).collect();
        match metric {
            Metric::Cosine => {
                assert_eq!(order, vec![b, a, c]);
                assert!((hits[0].similarity - 0.99995).abs() < 1e-3);
            }
            Metric::Dot => assert_eq!(order, vec![b, a, c]),
            Metric::L2 => {
                assert_eq!(order, vec![a, c, b]);
                assert!(
                    (hits[0].similarity - -0.01).abs() < 1e-6,
                    "negated squared distance"
                );
            }
        }
        assert!(hits.windows(2).all(|w| w[0].similarity >= w[1].similarity));
        assert!(db.delete_vector(name, a).unwrap());
        assert!(!db.delete_vector(name, a).unwrap());
        let hits = db
            .search_vectors_exact(name, &[1.0, 0.1], 3, &VectorFilter::default())
            .unwrap();
        assert!(hits.iter().all(|h| h.record != a));
        db.upsert_vector(name, c, &[1.0, 0.1]).unwrap();
        assert_eq!(db.get_vector(name, c).unwrap().unwrap(), vec![1.0, 0.1]);
    }
}

#[test]
fn scope_filters_select_messages() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    space(&db, "s", 2, Metric::Cosine);
    let work = conv(&db, "w", "/work", &["w1", "w2"]);
    let home = conv(&db, "h", "/home", &["h1"]);
    let mut items = Vec::new();
    for (i, m) in work.messages.iter().chain(&home.messages).enumerate() {
        items.push((m.id, vec![1.0, i as f32]));
    }
    db.upsert_vectors("s", &items).unwrap();
    let q = [1.0, 0.0];
    let run = |f: VectorFilter| {
        db.search_vectors_exact("s", &q, 10, &f)
            .unwrap()
            .into_iter()
            .map(|h| h.record)
            .collect::<Vec<_>>()
    };
    assert_eq!(run(VectorFilter::default()).len(), 3);
    let in_work = run(VectorFilter {
        scope: Filter {
            folder: Some("/work".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    assert_eq!(in_work, vec![work.messages[0].id, work.messages[1].id]);
    let one = run(VectorFilter {
        conversation_id: Some(home.conversation.id),
        ..Default::default()
    });
    assert_eq!(one, vec![home.messages[0].id]);
    let listed = run(VectorFilter {
        records: Some(vec![work.messages[1].id, home.messages[0].id]),
        ..Default::default()
    });
    assert_eq!(listed, vec![work.messages[1].id, home.messages[0].id]);
    let none = run(VectorFilter {
        role: Some("assistant".into()),
        ..Default::default()
    });
    assert!(none.is_empty());
    // Deleting a conversation deletes its messages' vectors.
    db.delete_conversation(work.conversation.id).unwrap();
    assert_eq!(run(VectorFilter::default()), vec![home.messages[0].id]);
    assert!(db.get_vector("s", work.messages[0].id).unwrap().is_none());
}
