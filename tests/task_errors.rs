//! A task body may return its own errors with `?`: I/O and parse errors and any
//! boxed error convert into `Error::External`, which the runtime wraps in
//! `Error::TaskFailed` naming the task.

use eigenflow::graph::{Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::error::Error as _;

fn run_one(
    name: &'static str,
    body: impl FnOnce() -> eigenflow::Result<()> + Send + 'static,
) -> Error {
    let mut g = TaskGraph::new();
    g.add(Task::new(name, move |_| body()));
    Runtime::builder()
        .threads(1)
        .build()
        .run(g)
        .expect_err("the body fails")
}

#[test]
fn io_error_with_question_mark_names_the_task() {
    let path = std::env::temp_dir().join("eigenflow-no-such-dir/none/file.bin");
    let err = run_one("load.input", move || {
        let _bytes = std::fs::read(&path)?;
        Ok(())
    });
    match &err {
        Error::TaskFailed { task, source } => {
            assert_eq!(task, "load.input");
            match source.as_ref() {
                Error::External(e) => {
                    let io = e
                        .downcast_ref::<std::io::Error>()
                        .expect("the io::Error itself");
                    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
                }
                other => panic!("expected External, got {other:?}"),
            }
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("load.input"), "{msg}");
    // The chain reaches the io::Error: TaskFailed -> (transparent) io::Error.
    assert!(err.source().is_some());
}

#[test]
fn parse_errors_and_custom_errors_convert() {
    let err = run_one("parse", || {
        let _n: usize = "twelve".parse()?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, source } if task == "parse" && matches!(**source, Error::External(_))),
        "{err:?}"
    );
    let err = run_one("parse.float", || {
        let _x: f64 = "1.2.3".parse()?;
        Ok(())
    });
    assert!(
        matches!(&err, Error::TaskFailed { task, .. } if task == "parse.float"),
        "{err:?}"
    );

    #[derive(Debug)]
    struct Mine;
    impl std::fmt::Display for Mine {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("my own failure")
        }
    }
    impl std::error::Error for Mine {}
    let err = run_one("mine", || Err(Error::external(Mine)));
    match &err {
        Error::TaskFailed { task, source } if task == "mine" => match source.as_ref() {
            Error::External(e) => assert!(e.downcast_ref::<Mine>().is_some()),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("my own failure"), "{err}");
}
