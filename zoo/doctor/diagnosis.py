"""The diagnosis: the checks run in order, their verdict and exit code (the package's docstring has the codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zoo.doctor.checks import FAIL, OK, OVER, SKIPPED, Check, blocked, launcher_checks
from zoo.doctor.config import LAUNCHERS, ConfigReport, Guardrail
from zoo.errors import EXIT_OK, EXIT_PROBLEM, EXIT_REFUSED, UsageError, ZooError


@dataclass
class Diagnosis:
    """Everything doctor found, in the order it checked; :attr:`exit_code` is the verdict."""

    environment: dict
    framework: str | None = None
    checks: list[Check] = field(default_factory=list)
    guardrail: Guardrail = field(default_factory=Guardrail)
    config: ConfigReport | None = None
    policy: dict | None = None  # the artifact: path, sha256, run, entry, companions
    policy_class: dict | None = (
        None  # --policy-class without a file: the class and the entry it is evaluated as
    )
    env: dict | None = None  # env id, module, and (probed) spaces
    eval_budget: dict | None = None
    handoff: list[str] = field(default_factory=list)  # the files --handoff wrote

    @property
    def exit_code(self) -> int:
        statuses = {c.status for c in self.checks}
        if FAIL in statuses:
            return EXIT_PROBLEM
        return EXIT_REFUSED if OVER in statuses else EXIT_OK

    @property
    def verdict(self) -> str:
        return {
            EXIT_OK: "ok: every requested check passed",
            EXIT_PROBLEM: "a requirement is missing or invalid",
            EXIT_REFUSED: "the config exceeds or evades the guardrail",
        }[self.exit_code]

    def to_json(self) -> dict:
        """The diagnosis as strict JSON values: a config's own NaN or infinity is echoed as a string."""
        from zoo.strict_json import jsonable

        return jsonable(
            {
                "exit_code": self.exit_code,
                "verdict": self.verdict,
                "authorizes_training": False,
                "framework": self.framework,
                "checks": [c.to_json() for c in self.checks],
                "guardrail": self.guardrail.to_json(),
                "config": None
                if self.config is None
                else {
                    "path": str(self.config.path),
                    "values": self.config.values,
                    "runs": self.config.runs if not self.config.problems else None,
                },
                "policy": self.policy,
                "policy_class": self.policy_class,
                "env": self.env,
                "eval_budget": self.eval_budget,
                "handoff": self.handoff,
                "environment": self.environment,
            }
        )


def diagnose(
    *,
    framework: str | None = None,
    policy: Path | None = None,
    config: Path | None = None,
    launcher: str | None = None,
    probe_env: bool = False,
    env_id: str | None = None,
    env_module: str | None = None,
    exp_name: str | None = None,
    seed: int = 0,
    episodes: int | None = None,
    policy_class: str | None = None,
    guardrail: Guardrail | None = None,
    registry=None,
) -> Diagnosis:
    """Run the checks the arguments ask for, in order; raise :class:`UsageError` for contradictory ones.
    ``policy_class`` (``module:Class``, the custom framework) is checked for shape and its module found,
    never imported: doctor runs no user code."""
    from zoo.doctor.installed import environment

    _usage(framework, policy, config, launcher, probe_env, env_id)
    diagnosis = Diagnosis(environment(), framework, guardrail=guardrail or Guardrail())
    if framework is None:
        return diagnosis
    from zoo.frameworks import get_adapter

    adapter = get_adapter(framework)
    if policy_class is not None:
        from zoo.frameworks import LoadOptions

        adapter.check_options(LoadOptions(policy_class=policy_class))  # its shape; other frameworks refuse it
    config_report = _read_config(diagnosis, config, launcher, framework)
    env_id = env_id or (config_report.values.get("env_id") if config_report else None)
    _packages(diagnosis, adapter, policy, config_report, env_id, env_module)
    if policy_class is not None:
        from zoo.doctor.checks import module_check

        diagnosis.checks.append(
            module_check(
                policy_class.split(":")[0],
                "it defines your policy class; doctor does not import it",
                "make it importable (PYTHONPATH)",
            )
        )
        if policy is None:
            _class_budget(
                diagnosis, adapter, policy_class, env_id, env_module, exp_name, seed, episodes, registry
            )
    if policy is not None:
        from zoo.doctor.policy import check_policy

        check_policy(
            diagnosis,
            adapter,
            policy,
            env_id=env_id,
            env_module=env_module,
            exp_name=exp_name,
            probe_env=probe_env,
            seed=seed,
            episodes=episodes,
            registry=registry,
        )
    elif probe_env:
        _probe_env(diagnosis, env_id, env_module)
    if config_report is not None:
        _guardrail(diagnosis, config_report)
    return diagnosis


def _usage(framework, policy, config, launcher, probe_env, env_id) -> None:
    from zoo.frameworks import framework_names

    if framework is None and (policy or config or launcher or probe_env):
        raise UsageError(
            "--policy, --config, --launcher and --probe-env check a framework's setup",
            hint=f"add --framework {'|'.join(framework_names())}",
        )
    if framework is not None and framework not in framework_names():
        raise UsageError(
            f"--framework {framework}: not one of {', '.join(framework_names())}",
            hint="give the framework of an adapter zoo has or a plug-in installed here (zoo doctor lists them)",
        )
    if probe_env and env_id is None and policy is None and config is None:
        raise UsageError(
            "--probe-env needs the env to create",
            hint="add --env-id ID (or a --policy or --config that names one)",
        )
    if launcher is not None and launcher not in LAUNCHERS:
        raise UsageError(f"--launcher {launcher}: not one of {', '.join(LAUNCHERS)}")


def _read_config(
    diagnosis: Diagnosis, config: Path | None, launcher: str | None, framework: str
) -> ConfigReport | None:
    from zoo.doctor.config import read_config

    if config is None:
        if launcher is not None:
            diagnosis.checks += launcher_checks(launcher)
        return None
    report = read_config(config, launcher)
    diagnosis.config = report
    named = report.values.get("framework")
    if isinstance(named, str) and named != framework and not report.problems:
        report.problems.append(f"framework: the config says {named}, --framework says {framework}")
    for problem in report.problems:
        diagnosis.checks.append(Check("config", FAIL, problem, f"fix {config}"))
    if not report.problems:
        diagnosis.checks.append(Check("config", OK, f"{config}: every required field present and typed"))
    return report


def _packages(
    diagnosis: Diagnosis, adapter, policy, config_report: ConfigReport | None, env_id, env_module
) -> None:
    from zoo.doctor.checks import env_packages, framework_packages

    if policy is None and config_report is None:  # the framework alone: are its packages here?
        from zoo.doctor.checks import framework_check

        diagnosis.checks.append(framework_check(adapter))
    training = config_report is not None and not config_report.problems
    script = config_report.values.get("script") if training else None
    diagnosis.checks += framework_packages(
        adapter, loading=policy is not None, training=training, script=script
    )
    if training:
        diagnosis.checks += launcher_checks(config_report.values.get("launcher", "local"))
    if env_id:
        diagnosis.checks += env_packages(env_id, env_module)


def _class_budget(
    diagnosis: Diagnosis,
    adapter,
    policy_class: str,
    env_id,
    env_module,
    exp_name,
    seed: int,
    episodes,
    registry,
) -> None:
    """The evaluation ``zoo eval --policy-class`` would run: the entry it is evaluated as (``--exp-name``, else the
    registry's one entry that takes a class) on ``env_id``, resolved as ``zoo eval`` resolves it."""
    from zoo.envs import qualify_env_id
    from zoo.targets import class_target

    if env_id is None:
        raise UsageError(
            f"--policy-class {policy_class}: no env for it to act in",
            hint="add --env-id ID (or a --config that names one)",
        )
    env = qualify_env_id(env_id, env_module)
    entry = class_target(registry, policy_class, exp_name=exp_name, env_id=env).entry
    diagnosis.policy_class = {"class": policy_class, "exp_name": entry.name}
    diagnosis.eval_budget = {
        "seed": seed,
        "episodes": episodes or entry.eval["episodes"],
        "deterministic": adapter.eval_mode(entry, env)[0],
        "max_steps": None,
        "render_mode": None,
        "out": "eval.json",  # zoo eval's folder for a class: the current one
    }
    diagnosis.env = {"env_id": env}


def _probe_env(diagnosis: Diagnosis, env_id: str | None, env_module: str | None) -> None:
    from zoo.doctor.checks import probe_plain_env, skipped, spaces_check
    from zoo.envs import qualify_env_id

    if env_id is None:
        raise UsageError("--probe-env needs the env to create", hint="add --env-id ID")
    why = blocked(diagnosis.checks)
    if why:
        diagnosis.checks.append(skipped("spaces", why))
        return
    try:
        qualified = qualify_env_id(env_id, env_module)
    except ZooError as exc:
        diagnosis.checks.append(Check("spaces", FAIL, exc.message, exc.hint))
        return
    check = spaces_check(probe_plain_env(qualified), qualified)
    diagnosis.checks.append(check)
    diagnosis.env = {"env_id": qualified, **check.details}


def _guardrail(diagnosis: Diagnosis, report: ConfigReport) -> None:
    from zoo.doctor.config import apply_guardrail

    if report.problems:
        diagnosis.checks.append(Check("guardrail", SKIPPED, "not checked: the config has problems"))
        return
    apply_guardrail(report, diagnosis.guardrail)
    for line in report.over:
        diagnosis.checks.append(Check("guardrail", OVER, line))
    if not report.over:
        runs = report.runs
        diagnosis.checks.append(
            Check(
                "guardrail",
                OK,
                f"bounded: {report.values['total_timesteps']:,} steps, "
                f"{report.values['num_envs']} envs, {report.values['wall_time_minutes']:g} min, "
                f"{runs} run{'s' if runs != 1 else ''}, launcher "
                f"{report.values.get('launcher', 'local')}",
            )
        )
