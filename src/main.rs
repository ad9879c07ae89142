fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args().skip(2).map(Into::into).collect();
    let r = irqscope::golden::check_paths(&paths).unwrap();
    for (n, w) in &r.failed { println!("FAIL {n}: {w}"); }
    println!("{}", r.summary_line());
}
