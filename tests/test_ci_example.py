"""examples/ci/github-actions.yml (issue 24): a workflow a user can copy installs pinned CPU
torch and fedbench, runs `fedbench check` writing its table, and uploads that table."""

import re
from pathlib import Path

from click.testing import CliRunner

from fedbench.cli import cli

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def run_lines() -> list[str]:
    """The shell lines of the workflow's `run:` steps."""
    lines, block = [], False
    for line in WORKFLOW.read_text().splitlines():
        text = line.strip()
        if text.startswith("run:"):
            rest = text[4:].strip()
            block = rest == "|"
            if not block:
                lines.append(rest)
        elif block and text and not re.match(r"^(- |[\w-]+:)", text):
            lines.append(text)
        elif block:
            block = False
    return lines


def test_the_workflow_installs_checks_and_uploads_the_table():
    text = WORKFLOW.read_text()
    assert "\t" not in text and "on:" in text and "runs-on:" in text
    lines = run_lines()
    torch = [x for x in lines if "pip install" in x and "torch" in x]
    assert torch and "torch==" in torch[0] and "whl/cpu" in torch[0]
    # the same torch as the project's own CI installs
    ci_pin = re.search(r'"torch==([\d.]+)"', (ROOT / ".ci" / "run").read_text()).group(1)
    assert f"torch=={ci_pin}" in torch[0]
    assert any(re.search(r"pip install -e \.$", x) for x in lines)
    check = [x for x in lines if x.startswith("fedbench check")]
    report = re.search(r"--report (\S+)", check[0]).group(1)
    upload = text[text.index("actions/upload-artifact") :]
    assert re.search(rf"path: {re.escape(report)}\b", upload)
    assert "if: always()" in text[text.index("Upload") :]


def test_the_workflows_check_command_writes_the_table(tmp_path):
    """The workflow's own `fedbench check` line (pointed at made-up check runs) writes the
    Markdown table it uploads, with the verdict."""
    from fedbench.check import QUICK, check_configs
    from fedbench.testing import curve_until, write_fake_run

    res, ref = tmp_path / "runs", tmp_path / "ref.json"
    for name, cfg in check_configs(QUICK).items():
        top = 0.93 if name == "fedavg-drop-90" else 0.95  # behind, as the claim says
        write_fake_run(res, cfg, curve_until(top, 3, cfg.target_acc, cfg.rounds))
    line = next(x for x in run_lines() if x.startswith("fedbench check"))
    args = line.split()[1:]
    args[args.index("--report") + 1] = str(tmp_path / "check.md")
    reading = ["--quick", "--results", str(res), "--reference", str(ref)]
    r = CliRunner().invoke(cli, ["check", *reading, "--update"], obj={})
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, [*args, *reading], obj={})
    assert r.exit_code == 0, r.output
    table = (tmp_path / "check.md").read_text()
    assert table.startswith("# fedbench check against ")
    assert re.search(r"\| fedavg-synthetic +\| best_acc ", table) and table.endswith(
        "ok: within tolerance\n"
    )


def test_the_workflow_reproduces_every_paper_at_the_quick_scale_apart():
    """Issue 33: the paper-level regression run, its runs in their own folder."""
    line = next(x for x in run_lines() if x.startswith("fedbench reproduce"))
    assert "--all" in line and "--scale quick" in line
    results = re.search(r"--results (\S+)", line).group(1)
    text = WORKFLOW.read_text()
    assert f"{results}/quick/tables/" in text[text.index("actions/upload-artifact") :]
    r = CliRunner().invoke(cli, [*line.split()[1:], "--dry-run"], obj={})
    assert r.exit_code == 0, r.output
    assert "reproduce at the quick CI scale" in r.output
