"""The globals zoo lets SB3's pickled values rebuild, and why each is harmless.

SB3 stores values that JSON cannot hold (spaces, ``policy_kwargs`` with classes in them,
schedules) as base64 cloudpickle inside the zip's ``data`` file, and ``VecNormalize``
statistics as a plain pickle. Both are decoded with :func:`zoo.artifacts.restricted_pickle.
checked_loads` and this allowlist: classes whose construction only stores numbers
(spaces, numpy arrays and generators, ``RunningMeanStd``), classes referenced but not called
(activation functions, optimizers, feature extractors, policy classes), and ``VecNormalize``,
whose ``__setstate__`` only updates ``__dict__``. Functions and lambdas (old ``lr_schedule``
values are cloudpickled code) are never on it.

sb3-contrib's algorithms add only their policy classes, for the same reason as SB3's: a pickled
class is a reference the unpickler looks up, never calls; zoo then calls it the way the algorithm's
``_setup_model`` does (spaces, a constant schedule and the saved ``policy_kwargs``). Each class is
named as sb3-contrib pickles it: its ``MlpPolicy`` aliases pickle as the class they alias (TRPO's
are SB3's own ``ActorCriticPolicy`` family, already above), ``CnnPolicy``/``MultiInputPolicy``
as subclasses of their own. Layers these policies build inside (CrossQ's ``BatchRenorm1d``, the
LSTMs) are constructed by the policy, never pickled, so they are not listed.

:data:`SERIALIZED` is the wider list ``zoo check`` and ``zoo push`` hold *every* ``:serialized:`` value of
a zip to, including those zoo never decodes: SB3's own ``load`` cloudpickle-loads them all on the
machine of whoever downloads the zip. It was read off real saves of every SB3 and sb3-contrib
algorithm (2.9: schedules are ``FloatSchedule``/``ConstantSchedule``/``LinearSchedule`` objects, rl_zoo3's
``SimpleLinearSchedule``; buffer classes, ``TrainFreq``, action noise, episode-info deques, numpy
arrays and scalars; SB3 1.x's gym spaces) and holds classes and data only. A function pickled by value
(older SB3 saved its schedules as ``constant_fn`` closures, and a user's ``lambda`` schedule is one) is
Python bytecode: it names cloudpickle's function builders and is never on it. ARS pickles its
``weights`` tensor, whose storage ``torch.storage._load_from_bytes`` loads with
``torch.load(weights_only=False)``: that global is listed, and the bytes it is handed are held to
zoo's weights-only verification (:mod:`zoo.frameworks.sb3.own_load`).
"""

from __future__ import annotations

_NUMPY = [
    (core, name)
    for core in ("numpy._core.multiarray", "numpy.core.multiarray")  # numpy 2 and numpy 1 spellings
    for name in ("_reconstruct", "scalar")
] + [
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy.random._pickle", "__generator_ctor"),
    ("numpy.random._pickle", "__bit_generator_ctor"),
    ("numpy.random._pickle", "__randomstate_ctor"),
    ("numpy.random._pcg64", "PCG64"),
    ("numpy.random._pcg64", "PCG64DXSM"),
    ("numpy.random._mt19937", "MT19937"),
    ("numpy.random._philox", "Philox"),
    ("numpy.random._sfc64", "SFC64"),
    ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
]

_SPACES = [
    (f"gymnasium.spaces.{module}", name)
    for module, name in (
        ("box", "Box"),
        ("discrete", "Discrete"),
        ("multi_discrete", "MultiDiscrete"),
        ("multi_binary", "MultiBinary"),
        ("dict", "Dict"),
        ("tuple", "Tuple"),
    )
]

_TORCH = [
    ("torch.nn.modules.activation", name)
    for name in ("ReLU", "Tanh", "ELU", "LeakyReLU", "SiLU", "GELU", "Sigmoid", "Softplus", "Mish", "SELU")
] + [
    ("torch.optim.adam", "Adam"),
    ("torch.optim.adamw", "AdamW"),
    ("torch.optim.rmsprop", "RMSprop"),
    ("torch.optim.sgd", "SGD"),
]

_SB3_POLICIES = [
    ("stable_baselines3.common.policies", name)
    for name in ("ActorCriticPolicy", "ActorCriticCnnPolicy", "MultiInputActorCriticPolicy")
] + [
    (f"stable_baselines3.{algo}.policies", name)
    for algo, base in (("dqn", "DQNPolicy"), ("sac", "SACPolicy"), ("td3", "TD3Policy"))
    for name in (base, "CnnPolicy", "MultiInputPolicy")
]

_CONTRIB_POLICIES = (
    [
        (f"sb3_contrib.{algo}.policies", name)
        for algo, base in (("qrdqn", "QRDQNPolicy"), ("tqc", "TQCPolicy"))
        for name in (base, "CnnPolicy", "MultiInputPolicy")
    ]
    + [
        ("sb3_contrib.crossq.policies", "CrossQPolicy"),  # CrossQ has an MlpPolicy only
        ("sb3_contrib.ars.policies", "ARSPolicy"),
        ("sb3_contrib.ars.policies", "ARSLinearPolicy"),
    ]
    + [
        (f"sb3_contrib.common.{kind}.policies", f"{prefix}{name}")
        for kind, prefix in (("recurrent", "Recurrent"), ("maskable", "Maskable"))
        for name in ("ActorCriticPolicy", "ActorCriticCnnPolicy", "MultiInputActorCriticPolicy")
    ]
)

_SB3_OTHER = [
    ("stable_baselines3.common.torch_layers", name)
    for name in ("FlattenExtractor", "NatureCNN", "CombinedExtractor", "MlpExtractor")
] + [
    ("stable_baselines3.common.sb2_compat.rmsprop_tf_like", "RMSpropTFLike"),
    ("stable_baselines3.common.utils", "ConstantSchedule"),
    ("stable_baselines3.common.utils", "FloatSchedule"),
    ("stable_baselines3.common.utils", "LinearSchedule"),
    ("stable_baselines3.common.running_mean_std", "RunningMeanStd"),
    ("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"),
]

#: Everything SB3's (and sb3-contrib's) spaces, policy kwargs and VecNormalize pickles may reference.
ALLOWED: frozenset[tuple[str, str]] = frozenset(
    _NUMPY + _SPACES + _TORCH + _SB3_POLICIES + _CONTRIB_POLICIES + _SB3_OTHER
)

#: A pickled tensor's storage: ``torch.load(bytes, weights_only=False)``, so its bytes are verified separately.
LOAD_FROM_BYTES = ("torch.storage", "_load_from_bytes")

_SAVED_ONLY = (
    [
        ("stable_baselines3.common.buffers", name)
        for name in ("RolloutBuffer", "DictRolloutBuffer", "ReplayBuffer", "DictReplayBuffer")
    ]
    + [
        ("stable_baselines3.her.her_replay_buffer", "HerReplayBuffer"),
        ("stable_baselines3.her.goal_selection_strategy", "GoalSelectionStrategy"),
        ("stable_baselines3.common.type_aliases", "TrainFreq"),
        ("stable_baselines3.common.type_aliases", "TrainFrequencyUnit"),
        ("stable_baselines3.common.noise", "NormalActionNoise"),
        ("stable_baselines3.common.noise", "OrnsteinUhlenbeckActionNoise"),
        ("stable_baselines3.common.noise", "VectorizedActionNoise"),
        ("rl_zoo3.utils", "SimpleLinearSchedule"),
        ("sb3_contrib.common.maskable.buffers", "MaskableRolloutBuffer"),
        ("sb3_contrib.common.maskable.buffers", "MaskableDictRolloutBuffer"),
        ("sb3_contrib.common.recurrent.buffers", "RecurrentRolloutBuffer"),
        ("sb3_contrib.common.recurrent.buffers", "RecurrentDictRolloutBuffer"),
        ("torch._utils", "_rebuild_tensor_v2"),
        LOAD_FROM_BYTES,
        ("collections", "deque"),
        ("collections", "OrderedDict"),  # episode infos; Dict observations
    ]
    + [
        ("numpy", name)
        for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_")
    ]
    + [
        (f"gym.spaces.{module}", name)  # SB3 1.x pickled OpenAI Gym's spaces (data classes, as gymnasium's)
        for module, name in (
            ("box", "Box"),
            ("discrete", "Discrete"),
            ("multi_discrete", "MultiDiscrete"),
            ("multi_binary", "MultiBinary"),
            ("dict", "Dict"),
            ("tuple", "Tuple"),
        )
    ]
    + [("gym.utils.seeding", "RandomNumberGenerator")]
)

#: What any ``:serialized:`` value of an SB3 zip may name (as ``"module.name"``): anything else is code
#: SB3's load would run, or a global zoo cannot check without running it.
SERIALIZED: frozenset[str] = frozenset(f"{module}.{name}" for module, name in (*ALLOWED, *_SAVED_ONLY))
