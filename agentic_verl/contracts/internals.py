"""Every verl / vLLM symbol agentic_verl relies on beyond its documented hooks, and the hooks it subclasses.

One entry per symbol: what we rely on, why, and which of our files does. `check_contracts()` checks each against
the installed packages (tests/test_contracts.py, `agentic-verl doctor`); docs/contracts.md explains the list, and
tests/test_contracts.py checks that every verl / vLLM name our code imports has an entry here naming that file.
To add one: a `Contract(...)` in the group (`GROUPS`, the titles of docs/contracts.md's tables) it belongs to.
Written against verl 0.9.1 and vLLM 0.24.0. An entry with `public=True` is a documented extension point (a
registry, a base class, a config key); the others are internals no public hook reaches, so a verl or vLLM
release may change them without notice: this list is where such a change shows up first.
"""

from __future__ import annotations

from agentic_verl.contracts.checker import Contract

_SFT = "agentic_verl/training/sft_trainer.py"
_TRAJECTORIES = "agentic_verl/data/sft_trajectories.py"
_LOSSES = ("agentic_verl/training/sft_losses.py", "agentic_verl/training/v2p_loss.py")
_TRACED = "agentic_verl/agent_loops/tool_agent_traced.py"
_IN_PROCESS = "agentic_verl/agent_loops/in_process.py"
_DOCTOR = "agentic_verl/commands/doctor.py"
_WORKAROUNDS = "agentic_verl/cpu/_verl_workarounds.py"
_CHECKPOINTS = "agentic_verl/training/checkpoints.py"
_VLLM_PLUGIN = "agentic_verl/cpu/vllm_plugin.py"
_ENGINE = "agentic_verl/generation/vllm_engine.py"
_MULTI_TURN = "agentic_verl/agent_loops/bfcl_multi_turn.py"
_GIGPO = "agentic_verl/training/gigpo.py"
_LOOPS = ("agentic_verl/agent_loops/rag_r1.py", "agentic_verl/agent_loops/function_call.py",
          "agentic_verl/agent_loops/gui.py", _MULTI_TURN)
_FSDP = "verl.workers.engine.fsdp.transformer_impl"
_TOOL_LOOP = "verl.experimental.agent_loop.tool_agent_loop"
_MEGATRON = "verl.workers.engine.megatron.transformer_impl"  # imports megatron.core: read from its file (static)
_TU = "verl.utils.tensordict_utils"
_SEARCH = "agentic_verl/tools/search.py"
_MCP, _CODE = "agentic_verl/tools/mcp.py", "agentic_verl/tools/code.py"
_MCP_SCHEMA = "agentic_verl/tools/mcp_schema.py"
_REWARD_FNS = ("reward_fns/qa_em.py", "reward_fns/bfcl_ast.py", "reward_fns/bfcl_multi_turn.py", "reward_fns/gui_click.py")

VERL_SFT = (
    Contract("verl.trainer.sft_trainer:SFTTrainer", kind="class",
             relies_on="sets self.config, self.engine_config, self.optimizer_config; every method we define overrides "
                       "one of its own",
             why="no config key or hook chooses the SFT loss; LossSFTTrainer overrides _build_engine",
             used_by=(_SFT,), source_has=("self.engine_config =", "self.optimizer_config ="),
             overridden_by="agentic_verl.training.sft_trainer:LossSFTTrainer"),
    Contract("verl.trainer.sft_trainer:SFTTrainer._build_engine",
             relies_on="builds self.training_client (a TrainingWorker), sets its loss with set_loss_fn(loss_fn=...) "
                       "and self.engine = self.training_client.engine; the engine builds its model later",
             why="we call it, then replace the loss and wrap the worker (the loss is hard-coded there)",
             used_by=(_SFT,),
             source_has=("self.training_client = TrainingWorker(", "self.training_client.set_loss_fn(loss_fn=",
                         "self.engine = self.training_client.engine")),
    Contract("verl.workers.engine_workers:TrainingWorker", kind="class",
             relies_on="set_loss_fn(loss_fn), train_batch(data), infer_batch(data) and .engine",
             why="_LossHooks wraps train_batch / infer_batch around the loss's batch preparation and own step",
             used_by=(_SFT,), source_has=("def set_loss_fn(self, loss_fn)", "def train_batch(self, data",
                                          "def infer_batch(self, data",
                                          "self.engine: BaseEngine = EngineRegistry.new(")),
    Contract(f"{_FSDP}:FSDPEngine._build_module",
             relies_on="returns the HF module before FSDP wraps it (so wrapping it on the instance takes effect); "
                       "imports load_valuehead_model at call time (so the CPU workaround's replacement is used)",
             why="verl has no post-build model hook (V2P's prepare_model: stage, frozen weights); see "
                 "load_valuehead_model", used_by=(_SFT, _WORKAROUNDS),
             source_has=("from verl.utils.model import load_valuehead_model",)),
    Contract(f"{_FSDP}:FSDPEngine._build_model_optimizer",
             relies_on="calls self._build_module() (through the instance) before wrapping the module in FSDP",
             why="see FSDPEngine._build_module", used_by=(_SFT,), source_has=("module = self._build_module()",)),
    Contract(f"{_FSDP}:FSDPEngineWithLMHead.prepare_model_outputs",
             params=("output", "output_args", "micro_batch", "logits_processor_func"),
             relies_on="called per micro-batch with these keyword arguments; returns the dict the loss reads",
             why="V2P's loss reads the model's pointer_logits next to log_probs; wrapped on the engine instance",
             used_by=(_SFT,)),
    Contract(f"{_FSDP}:FSDPEngineWithLMHead.forward_step",
             relies_on="calls self.prepare_model_outputs(...) by keyword and the loss as "
                       "loss_function(model_output=, data=, dp_group=)",
             why="the instance-level wrap of prepare_model_outputs and our losses' call signature",
             used_by=(_SFT, *_LOSSES),
             source_has=("model_output = self.prepare_model_outputs(output=raw_output, output_args=output_args, "
                         "micro_batch=micro_batch, logits_processor_func=",
                         "loss_function(model_output=model_output, data=micro_batch, dp_group=")),
    Contract(f"{_FSDP}:FSDPEngine.get_data_parallel_group",
             relies_on="the data-parallel process group", why="SRML / V2P all-reduce the step's global counts",
             used_by=(_SFT,)),
    Contract("verl.workers.utils.losses:sft_loss", params=("config", "model_output", "data", "dp_group"),
             relies_on="verl's token-mean SFT loss; reads data['dp_size'] and data['batch_num_tokens']; multiplies "
                       "each log-prob by its loss_mask value, so an integer loss_mask value is a token weight",
             why="loss 'sft' is verl's exactly, and V2P's LM term; RAG-R1 SFT rows weight the deciding token",
             used_by=(*_LOSSES, _TRAJECTORIES),
             source_has=('data["dp_size"]', 'data["batch_num_tokens"]', "log_prob_flatten = log_prob.values()",
                         "masked_sum(log_prob_flatten, loss_mask_flatten)")),
    Contract("verl.utils.torch_functional:masked_sum",
             relies_on="sums values * mask (a numeric mask weighs each value)",
             why="see sft_loss: the deciding token's weight in RAG-R1 SFT rows", used_by=(_TRAJECTORIES,),
             source_has=("(valid_values * mask).sum(",)),
    Contract(f"{_FSDP}:FSDPEngine.forward_backward_batch",
             relies_on="batch_num_tokens (sft_loss's divisor) is the sum of loss_mask over the global batch",
             why="with weights in loss_mask the SFT loss is a weighted token mean; SRML / V2P scale by dp_size",
             used_by=(_TRAJECTORIES, *_LOSSES),
             source_has=('batch_num_tokens = data["loss_mask"].sum()',
                         "tu.assign_non_tensor(data, dp_size=self.get_data_parallel_size())")),
    Contract(f"{_MEGATRON}:MegatronEngineWithLMHead.postprocess_micro_batch_func", static=True,
             params=("output", "data", "forward_only", "loss_function"),
             relies_on="calls the loss as loss_function(model_output=, data=, dp_group=) per micro-batch, as the FSDP "
                       "engine does",
             why="SRML (and loss 'sft') may run under engine=megatron: the same loss object, the same call",
             used_by=(_SFT, "agentic_verl/training/sft_losses.py"),
             source_has=("loss_function(model_output=model_output, data=data, dp_group=self.get_data_parallel_group())",)),
    Contract(f"{_MEGATRON}:MegatronEngine.forward_backward_batch", static=True, params=("data", "loss_function"),
             relies_on="puts batch_num_tokens (the global loss_mask sum) and dp_size in the batch before the micro-batches",
             why="SRML's per-micro-batch share of the step's loss is scaled by dp_size, as sft_loss's is",
             used_by=("agentic_verl/training/sft_losses.py",),
             source_has=("tu.assign_non_tensor(data, batch_num_tokens=batch_num_tokens.item())",
                         "tu.assign_non_tensor(data, dp_size=self.get_data_parallel_size())")),
    Contract(f"{_MEGATRON}:MegatronEngine.get_data_parallel_group", static=True,
             relies_on="the data-parallel process group", why="SRML all-reduces the step's span counts under Megatron",
             used_by=(_SFT,)),
    Contract(f"{_TU}:assign_non_tensor", params=("tensor_dict",), probe="assign_non_tensor_reads_back_plain",
             relies_on="assign_non_tensor(data, key=int) stores a value that data[key] reads back as the plain int",
             why="SRML / V2P add the step's global counts to the batch before verl splits it; the adapter replaces "
                 "the step's metrics", used_by=(_SFT, *_LOSSES)),
    Contract(f"{_TU}:get", params=("tensordict", "key", "default"), probe="get_unwraps_non_tensor",
             relies_on="get(output, 'metrics') returns the metrics dict assigned, None when there is none",
             why="the SFT adapter reduces the losses' verl Metrics to floats", used_by=(_SFT,)),
    Contract(f"{_TU}:get_non_tensor_data", params=("data", "key", "default"), probe="get_non_tensor_data_defaults",
             relies_on="get_non_tensor_data(data=, key='pad_mode', default=) returns the value assigned, else default",
             why="SRML / V2P refuse any pad_mode but no_padding", used_by=_LOSSES),
    Contract("verl.utils.dataset.dataset_utils:DatasetPadMode", kind="class", probe="pad_mode_matches_config_strings",
             relies_on="DatasetPadMode.NO_PADDING equals the config string 'no_padding'",
             why="the losses compare the batch's pad_mode with it", used_by=_LOSSES),
    Contract("verl.trainer.sft_trainer:SFTTrainer.fit",
             relies_on="hands every batch data.pad_mode as the non-tensor key 'pad_mode'",
             why="the key the losses read (see get_non_tensor_data)", used_by=_LOSSES,
             source_has=('"pad_mode": self.config.data.pad_mode',)),
    Contract("verl.trainer.config:sft_trainer_engine.yaml", kind="config", public=True,
             config_keys=("data.pad_mode", "data.max_length", "data.truncation", "data.custom_cls.path",
                          "data.custom_cls.name"),
             relies_on="the config our SFT trainer starts from (hydra defaults: sft_trainer_engine) has these keys",
             why="our SFT datasets are chosen by data.custom_cls and honour pad_mode, max_length, truncation",
             used_by=(_SFT, "agentic_verl/training/sft_dataset.py", "agentic_verl/training/fc_sft_dataset.py")),
    Contract("verl.utils.metric:AggregationType", kind="class", source_has=('MEAN = "mean"', 'SUM = "sum"'),
             relies_on="members SUM and MEAN", why="the losses' metrics name how verl reduces them", used_by=_LOSSES),
    Contract("verl.utils.device:auto_set_device", params=("config",), public=True,
             relies_on="sets trainer.device from the hardware, as verl's SFT main does", why="run_sft mirrors main",
             used_by=(_SFT,)),
    Contract("verl.utils.device:get_device_name", relies_on="'cpu' on the CPU platform, else the accelerator's name",
             why="where collectives run; whether the CPU workarounds apply", used_by=(*_LOSSES, _WORKAROUNDS)),
    Contract("verl.utils.distributed:destroy_global_process_group",
             relies_on="tears down what initialize_global_process_group built", why="run_sft mirrors verl's main",
             used_by=(_SFT,)),
    Contract("verl.utils.metric:Metric", kind="class", params=("aggregation", "value"),
             relies_on="Metric(AggregationType, value), .aggregate(), Metric.aggregate_dp([...])",
             why="our losses report metrics the way verl's engine reduces them", used_by=_LOSSES,
             source_has=("def aggregate(self", "def aggregate_dp(")),
    Contract("verl.utils.megatron_utils:get_hf_model_checkpoint_path", static=True, params=("checkpoint_path",),
             relies_on="a Megatron step's HF weights are get_model_checkpoint_path(step)/_HUGGINGFACE_SUBDIR "
                       "(model/huggingface, checkpoint layout v2)",
             why="the SFT -> RL handoff reads the subfolder from this function's joins (training/checkpoints.py)",
             used_by=(_CHECKPOINTS,), source_has=("get_model_checkpoint_path(checkpoint_path)", "_HUGGINGFACE_SUBDIR")),
    Contract("verl.utils.checkpoint.fsdp_checkpoint_manager:FSDPCheckpointManager.save_checkpoint",
             relies_on="an FSDP step's HF config, tokenizer and weights go to <step>/huggingface",
             why="the SFT -> RL handoff looks there for FSDP checkpoints (verl has no helper to ask)",
             used_by=(_CHECKPOINTS,), source_has=('os.path.join(local_path, "huggingface")',)),
    Contract("verl.utils.dataset.multiturn_sft_dataset:MultiTurnSFTDataset", kind="class",
             params=("parquet_files", "tokenizer", "config", "processor", "max_samples"),
             relies_on="attributes image_key, dataframe, parquet_files; items with input_ids, loss_mask, "
                       "multi_modal_inputs",
             why="V2PSFTDataset adds each sample's pointer label to verl's own sample",
             used_by=("agentic_verl/training/v2p_dataset.py",),
             source_has=("self.image_key =", "self.dataframe =", "self.parquet_files =", '"multi_modal_inputs"',
                         '"loss_mask"'),
             overridden_by="agentic_verl.training.v2p_dataset:V2PSFTDataset"),
)

VERL_AGENT_LOOPS = (
    Contract("verl.experimental.agent_loop.agent_loop:_agent_loop_registry", kind="dict",
             relies_on="name -> hydra config ({'_target_': ...}) of every registered agent loop",
             why="verl has no public lookup: eval and SFT data generation build loops as AgentLoopWorker does, "
                 "doctor checks registration; the plugin adds outside loops as entries of the same form",
             used_by=(_IN_PROCESS, _DOCTOR, "agentic_verl/plugin.py")),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopBase.__init__",
             params=("trainer_config", "server_manager", "tokenizer", "processor", "dataset_cls", "data_config",
                     "hf_model_type"),
             relies_on="the keyword arguments AgentLoopWorker instantiates a loop with; sets rollout_config, "
                       "server_manager, tokenizer, processor",
             why="make_agent_loop passes exactly these; our loops read those attributes",
             used_by=(_IN_PROCESS, *_LOOPS),
             source_has=("self.rollout_config =", "self.server_manager =", "self.tokenizer =", "self.processor =")),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopBase._assert_mm_supported",
             params=("has_multi_modal",), relies_on="raises verl's own error when the model cannot take images",
             why="the gui_grounding loop fails as clearly as verl's loops", used_by=("agentic_verl/agent_loops/gui.py",)),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopBase._get_mm_processor_kwargs",
             relies_on="the processor kwargs (data.mm_processor_kwargs) verl hands the processor",
             why="gui_grounding resizes the screenshot the same way", used_by=("agentic_verl/agent_loops/gui.py",)),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopBase.ct_build_initial_tokens",
             params=("messages", "images", "mm_inputs_out"), relies_on="the prompt's token ids, built as verl does",
             why="our loops' prompts match verl's tokenization", used_by=_LOOPS),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopBase", kind="class", public=True,
             relies_on="the base class of every agent loop; __init__ sets self.continuous_token_builder (the model "
                       "family's Continuous Token builder) and self.loop (the running event loop)",
             why="bfcl_multi_turn appends tool outputs and user turns through the builder, as verl's ToolAgentLoop "
                 "does, and checks the prompt length itself instead of ct_build_initial_tokens' silent left cut; the "
                 "plugin refuses an outside loop that is not a subclass",
             used_by=(_MULTI_TURN, "agentic_verl/plugin.py"),
             source_has=("self.continuous_token_builder = create_continuous_token_builder(",
                         "self.loop = get_event_loop()")),
    Contract("verl.utils.tokenizer.continuous_token:ContinuousTokenBuilder.build_initial_tokens",
             params=("messages", "tools"), relies_on="the prompt's token ids with the generation prompt",
             why="bfcl_multi_turn builds its prompt (and refuses one over rollout.prompt_length)",
             used_by=(_MULTI_TURN,)),
    Contract("verl.utils.tokenizer.continuous_token:ContinuousTokenBuilder.merge_context_tokens",
             params=("previous_messages", "updated_messages", "runtime_token_ids", "tools"),
             relies_on="returns a MergeResult: the runtime ids (minus removed_prefix_token_count trailing ones) + the "
                       "appended messages' tokens with the generation prompt, rendered with `tools` (format: native)",
             why="bfcl_multi_turn's observation tokens (tool outputs, later user turns)", used_by=(_MULTI_TURN,)),
    Contract("verl.utils.tokenizer.continuous_token:MergeResult", kind="class",
             params=("token_ids", "removed_prefix_token_count"),
             relies_on="token_ids: the merged stream; removed_prefix_token_count: trailing runtime tokens it dropped",
             why="bfcl_multi_turn masks what the merge added and refuses to drop policy tokens",
             used_by=(_MULTI_TURN,)),
    Contract("verl.experimental.agent_loop.agent_loop:DictConfigWrap", kind="class", params=("config",),
             relies_on="wraps the trainer/data config handed to a loop", why="make_agent_loop builds loops",
             used_by=(_IN_PROCESS,)),
    Contract("verl.experimental.agent_loop.agent_loop:ToolListWrap", kind="class", params=("tools",),
             relies_on="wraps the tool list handed to a loop", why="make_agent_loop builds loops",
             used_by=(_IN_PROCESS,)),
    Contract("verl.workers.rollout.llm_server:LLMServerClient.generate", public=True,
             params=("request_id", "prompt_ids", "sampling_params", "image_data", "mm_processor_kwargs"),
             relies_on="a loop's server_manager.generate(...) -> TokenOutput, called by keyword",
             why="our loops generate through it; our in-process server managers imitate it",
             used_by=(*_LOOPS, "agentic_verl/agent_loops/_common.py", _IN_PROCESS)),
    Contract("verl.workers.rollout.vllm_rollout.vllm_async_server:vLLMHttpServer.generate",
             relies_on="a request's sampling_params['seed'] reaches vLLM's SamplingParams unchanged (verl sets a "
                       "seed itself only under full_determinism, and then with setdefault)",
             why="our loops seed each sampled request (agent_loops/sampling_seeds.py) so that a seeded run repeats",
             used_by=("agentic_verl/agent_loops/sampling_seeds.py",),
             source_has=('sampling_params.setdefault("seed",',
                         "SamplingParams(max_tokens=max_tokens, **sampling_params)")),
    Contract("verl.workers.rollout.replica:TokenOutput", kind="class",
             params=("token_ids", "log_probs", "stop_reason", "num_preempted", "extra_fields"),
             builds_with=("token_ids", "log_probs", "stop_reason"), probe="token_output_as_we_build_it",
             relies_on="what server_manager.generate returns: built from token_ids, log_probs, stop_reason (and "
                       "num_preempted, extra_fields); our loops read those fields",
             why="our in-process server managers return it", used_by=(_IN_PROCESS,)),
    Contract("verl.experimental.agent_loop.agent_loop:AgentLoopOutput", kind="class", public=True,
             params=("prompt_ids", "response_ids", "response_mask", "response_logprobs", "multi_modal_data",
                     "mm_processor_kwargs", "num_turns", "metrics", "extra_fields"),
             builds_with=("prompt_ids", "response_ids", "response_mask", "response_logprobs", "num_turns", "metrics",
                          "extra_fields"), probe="agent_loop_output_as_we_build_it",
             relies_on="an agent loop's result, built from these fields (metrics as a plain dict); the trace adds "
                       "keys to its extra_fields", why="every loop of ours returns one",
             used_by=(*_LOOPS, _TRACED, "agentic_verl/agent_loops/trace.py")),
    Contract("verl.utils.dataset.rl_dataset:RLHFDataset", kind="class",
             relies_on="__getitem__ hands a loop raw_prompt, index, tools_kwargs and interaction_kwargs (from the "
                       "row's extra_info); loops get the class as dataset_cls",
             why="sample_kwargs builds a loop's kwargs from a parquet row the same way; make_agent_loop passes it",
             used_by=(_IN_PROCESS,),
             source_has=('row_dict["raw_prompt"] =', 'row_dict["index"] = index',
                         'row_dict["tools_kwargs"] = tools_kwargs',
                         'row_dict["interaction_kwargs"] = interaction_kwargs')),
    Contract("verl.workers.config.rollout:RolloutConfig", kind="class", public=True,
             config_keys=("custom", "prompt_length", "response_length", "agent.agent_loop_config_path",
                          "multi_turn.tool_config_path", "val_kwargs.temperature"),
             relies_on="rollout.custom (a free dict: our loops' settings) and the rollout keys our loops read",
             why="our loops read rollout.custom.<loop>; loop_trainer_config imitates the rest",
             used_by=(*_LOOPS, _IN_PROCESS)),
    Contract("verl.trainer.config:_generated_ppo_trainer.yaml", kind="config", public=True,
             config_keys=("data.apply_chat_template_kwargs", "data.mm_processor_kwargs",
                          "trainer.v1.sampler.custom_sampler.path", "trainer.v1.sampler.custom_sampler.name",
                          "reward.custom_reward_function.path", "reward.custom_reward_function.name"),
             relies_on="verl's trainer config has these keys",
             why="loop_trainer_config imitates the data keys; a run selects our replay buffer and reward functions "
                 "with the others", used_by=(_IN_PROCESS, "agentic_verl/agent_loops/trace_sampler.py",
                                             *_REWARD_FNS)),
    Contract("verl.experimental.agent_loop.agent_loop:register", public=True, params=("agent_name",),
             relies_on="@register(name) puts a loop in verl's registry", why="our loops' names in YAML",
             used_by=(*_LOOPS, _TRACED)),
)

VERL_TOOL_AGENT_LOOP = (
    Contract(f"{_TOOL_LOOP}:ToolAgentLoop", kind="class",
             relies_on="sets tools, tool_parser, tool_parser_name, response_length, max_assistant_turns, "
                       "max_user_turns; every method we define overrides one of its own",
             why="verl's loop drops parse errors and tool verdicts; no hook exposes them", used_by=(_TRACED,),
             source_has=("self.tools =", "self.tool_parser =", "self.tool_parser_name =", "self.response_length =",
                         "self.max_assistant_turns =", "self.max_user_turns ="),
             overridden_by="agentic_verl.agent_loops.tool_agent_traced:TracedToolAgentLoop",
             own=("_raise_if_a_tool_tripped", "_failure")),
    Contract(f"{_TOOL_LOOP}:ToolAgentLoop.__init__",
             relies_on="renders each tool's schema as tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)",
             why="McpTool's schema models keep a server's nested keys (items, anyOf) only through that dump",
             used_by=("agentic_verl/tools/mcp_schema.py",),
             source_has=("tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)",)),
    Contract(f"{_TOOL_LOOP}:ToolAgentLoop._handle_generating_state",
             params=("agent_data", "sampling_params", "ignore_termination"),
             relies_on="stops before parsing on exactly these conditions (copied to tell a parse error from an early "
                       "stop), then sets agent_data.tool_calls from the parser",
             why="one trace turn per generation; lost <tool_call> blocks count as parse_error", used_by=(_TRACED,),
             source_has=("if not ignore_termination and len(agent_data.response_mask) >= self.response_length:",
                         "if self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns:",
                         "if self.max_user_turns and agent_data.user_turns >= self.max_user_turns:",
                         "agent_data.tool_calls = await self.tool_parser.extract_tool_calls(")),
    Contract(f"{_TOOL_LOOP}:ToolAgentLoop._handle_processing_tools_state", params=("agent_data",),
             relies_on="appends the tool observations to agent_data.response_mask",
             why="observation tokens per trace turn", used_by=(_TRACED,)),
    Contract(f"{_TOOL_LOOP}:ToolAgentLoop._call_tool", params=("tool_call", "tools_kwargs", "agent_data"),
             probe="call_tool_returns_response_reward_metrics",
             relies_on="returns (ToolResponse, reward, the tool's metrics dict); answers a tool's exception with the "
                       "text \"Error executing tool '<name>': ...\"; per-sample tools in agent_data._active_tools; "
                       "passes agent_data to the tool's execute",
             why="one trace tool call per call with its failure; the error text tells a tool's exception apart; "
                 "McpTool and PythonTool keep their per-trajectory state by agent_data (verl creates and releases a "
                 "tool instance around every call)",
             used_by=(_TRACED, _MCP, _CODE)),  # the probe calls it: the error text and _active_tools by behaviour
    Contract(f"{_TOOL_LOOP}:AgentData.__init__",
             relies_on="attributes tool_calls, response_ids, response_mask, assistant_turns, user_turns",
             why="read by the traced loop's overrides", used_by=(_TRACED,),
             source_has=("self.tool_calls", "self.response_ids", "self.response_mask", "self.assistant_turns",
                         "self.user_turns")),
    Contract(f"{_TOOL_LOOP}:AgentState", kind="class", relies_on="the state the handlers return",
             why="the traced loop's overrides return verl's state", used_by=(_TRACED,)),
    Contract("verl.experimental.agent_loop.tool_parser:ToolParser", kind="class",
             relies_on="ToolParser._registry maps parser names to classes; get_tool_parser(name, tokenizer); "
                       "await extract_tool_calls(ids) returns (text, [FunctionCall(name, arguments JSON)])",
             why="format: native loops and eval bfcl --mode fc read the model's native tool calls with the parser "
                 "the user names",
             used_by=("agentic_verl/agent_loops/native_format.py", "agentic_verl/eval/bfcl_eval.py"),
             source_has=("_registry", "def get_tool_parser(cls, name: str, tokenizer):",
                         "async def extract_tool_calls(")),
    Contract("verl.experimental.agent_loop.tool_parser:HermesToolParser.__init__",
             relies_on="tool_call_start_token is '<tool_call>'", why="counts <tool_call> blocks that did not parse",
             used_by=(_TRACED,), source_has=('self.tool_call_start_token: str = "<tool_call>"',)),
)

VERL_TOOLS = (
    Contract("verl.tools.base_tool:BaseTool", kind="class", public=True,
             relies_on="create / execute / release / get_openai_tool_schema; every method SearchTool defines is one of "
                       "its own", why="SearchTool is a verl tool; tool configs name BaseTool subclasses",
             used_by=(_SEARCH, _MCP, _CODE, "agentic_verl/tools/config.py"),
             overridden_by="agentic_verl.tools.search:SearchTool", own=("raise_if_tripped", "_check_arguments",
                                                                         "_retrieve")),
    Contract("verl.tools.schemas:ToolResponse", kind="class", public=True, builds_with=("text",),
             relies_on="ToolResponse(text=...)", why="a tool's observation", used_by=(_SEARCH, _MCP, _CODE)),
    Contract("verl.tools.schemas:OpenAIFunctionToolSchema", kind="class", public=True,
             relies_on="the tool's schema, as the tool YAML gives it", why="SearchTool's schema; the tool config check",
             used_by=(_SEARCH, _MCP, _CODE, _MCP_SCHEMA, "agentic_verl/tools/config.py")),
    Contract("verl.tools.schemas:OpenAIFunctionSchema", kind="class", public=True,
             relies_on="name, description, parameters", why="an MCP tool's schema read from its server",
             used_by=(_MCP_SCHEMA,)),
    Contract("verl.tools.schemas:OpenAIFunctionParametersSchema", kind="class", public=True,
             relies_on="type, properties, required", why="an MCP tool's parameters read from its server",
             used_by=(_MCP_SCHEMA,)),
    Contract("verl.tools.schemas:OpenAIFunctionPropertySchema", kind="class", public=True,
             relies_on="type, description, enum per parameter", why="an MCP tool's parameters read from its server",
             used_by=(_MCP_SCHEMA,)),
    Contract("verl.tools.tool_registry:initialize_tools_from_config", public=True, params=("tools_config_file",),
             relies_on="the tools of a tool YAML (verl's tool_config_path), as verl's rollout workers build them",
             why="the ReTool miniature's SFT traces and evaluation run the loop with the recipe's own tool YAML",
             used_by=("agentic_verl/demo/retool_task.py",)),
    Contract("verl.utils.rollout_trace:rollout_trace_op", probe="rollout_trace_op_keeps_an_async_method",
             relies_on="decorates an async method, keeps its signature and (tracing off) returns its result",
             why="SearchTool.execute is traced like BaseTool.execute (verl's rollout traces)",
             used_by=(_SEARCH, _MCP, _CODE)),
)

VERL_REWARDS_AND_METRICS = (
    Contract("verl.trainer.ppo.reward:get_custom_reward_fn", public=True, params=("config",),
             relies_on="loads reward.custom_reward_function.{path,name} from a file path; verl's reward managers call "
                       "it with data_source, solution_str, ground_truth, extra_info",
             why="how a run uses our reward_fns/*.py (tests/rewards/test_reward_fns_verl.py runs them through verl's "
                 "loader and naive reward manager)", used_by=_REWARD_FNS,
             source_has=('config.reward.get("custom_reward_function")',
                         "load_extern_object(module_path=module_path, object_name=fn_name)")),
    Contract("verl.experimental.reward_loop.reward_manager:register", public=True, params=("name",),
             relies_on="@register(name) puts a reward manager in verl's registry", why="reward manager agentic_trace",
             used_by=("agentic_verl/agent_loops/trace_reward.py",)),
    Contract("verl.experimental.reward_loop.reward_manager.naive:NaiveRewardManager", kind="class",
             relies_on="every method TraceRewardManager defines is one of its own",
             why="agentic_trace is NaiveRewardManager plus the loop's metrics",
             used_by=("agentic_verl/agent_loops/trace_reward.py",),
             overridden_by="agentic_verl.agent_loops.trace_reward:TraceRewardManager"),
    Contract("verl.experimental.reward_loop.reward_manager.naive:NaiveRewardManager.run_single", params=("data",),
             relies_on="reads non_tensor_batch['tool_extra_fields'] and merges it into the reward's extra_info; "
                       "returns {'reward_score', 'reward_extra_info'}",
             why="agentic_trace copies the loop's metrics into reward_extra_info, the only per-sample log verl has; "
                 "the bfcl_multi_turn reward reads the loop's model_calls from extra_info",
             used_by=("agentic_verl/agent_loops/trace_reward.py", "agentic_verl/rewards/bfcl/multi_turn.py"),
             source_has=('"tool_extra_fields"', "extra_info.update(tool_extra_fields.items())", '{"reward_score": reward, "reward_extra_info": reward_extra_info}')),
    Contract("verl.trainer.ppo.v1.replay_buffer:ReplayBuffer", kind="class", public=True,
             params=("trainer_mode",), relies_on="sample(global_steps, partition_id, batch_size) -> (batch, metrics); "
                                                 "its metrics are logged every training step",
             why="AgentMetricsReplayBuffer adds agent/... and reward/... metrics to each step",
             used_by=("agentic_verl/agent_loops/trace_sampler.py",), source_has=("def sample(self, global_steps: int, "
                                                                                  "partition_id: str, batch_size: int)",),
             overridden_by="agentic_verl.agent_loops.trace_sampler:AgentMetricsReplayBuffer"),
    Contract("verl.trainer.ppo.v1.replay_buffer:ReplayBufferAsync", kind="class", public=True,
             params=("trainer_mode",), relies_on="the buffer verl's trainer picks for the asynchronous modes; a "
                                                 "ReplayBuffer subclass with the same sample()",
             why="AgentMetricsReplayBuffer follows the trainer's mode as verl's own choice does",
             used_by=("agentic_verl/agent_loops/trace_sampler.py",),
             source_has=("def sample(self, global_steps: int, partition_id: str, batch_size: int)",),
             overridden_by="agentic_verl.agent_loops.trace_sampler:AgentMetricsReplayBufferAsync"),
    Contract("verl.trainer.ppo.v1.replay_buffer:ReplayBuffer._evict_terminal_groups",
             params=("global_steps", "partition_id", "eviction_reasons"),
             relies_on="called with (stale, dapo, failed, counts) uid sets whenever terminal groups are evicted; the "
                       "async buffer then refills them",
             why="AgentMetricsReplayBufferAsync counts failed groups and stops a rollout that only fails",
             used_by=("agentic_verl/agent_loops/trace_sampler.py",),
             source_has=("stale_uids, dapo_uids, failed_uids, dapo_counts = eviction_reasons",)),
    Contract("verl.trainer.ppo.v1.trainer_base", kind="module", public=True,
             relies_on="trainer.v1.sampler.custom_sampler.{path,name} names the replay buffer class",
             why="how a run selects AgentMetricsReplayBuffer", used_by=("agentic_verl/agent_loops/trace_sampler.py",),
             source_has=("load_extern_type(custom_sampler.path, custom_sampler.name)",
                         'sampler_cls = ReplayBuffer if self.trainer_mode == "sync" else ReplayBufferAsync')),
    Contract("transfer_queue:kv_batch_get", params=("keys", "partition_id", "select_fields"),
             relies_on="reads the sampled trajectories' extra_fields", why="as verl's own _compute_metrics does",
             used_by=("agentic_verl/agent_loops/trace_sampler.py", _GIGPO)),
    Contract("transfer_queue.metadata:KVBatchMeta", kind="class", params=("keys", "tags", "partition_id"),
             relies_on="what ReplayBuffer.sample returns as its batch", why="the keys to read",
             used_by=("agentic_verl/agent_loops/trace_sampler.py",)),
)

VERL_CPU = (
    Contract("verl.utils.distributed:initialize_global_process_group", params=("timeout_second",),
             relies_on="builds the backend as f\"cpu:gloo,{device}:{backend}\", which torch rejects on CPU",
             why="replaced on the CPU platform by the same body with backend 'gloo'", used_by=(_WORKAROUNDS, _SFT),
             source_has=('backend = f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}"',)),
    Contract("verl.utils.distributed:initialize_global_process_group_ray", params=("timeout_second", "backend"),
             relies_on="a given backend wins over f\"cpu:gloo,{device}:{backend}\"",
             why="wrapped on the CPU platform to pass backend='gloo'", used_by=(_WORKAROUNDS,),
             source_has=('backend = backend or f"cpu:gloo,',)),
    Contract("verl.workers.engine_workers", kind="module",
             relies_on="binds initialize_global_process_group_ray at import (after `import verl` loaded our plugin)",
             why="so the wrapped version is the one its workers call", used_by=(_WORKAROUNDS,),
             source_has=("from verl.utils.distributed import initialize_global_process_group_ray",)),
    Contract("verl.utils.model:load_valuehead_model",
             params=("local_path", "torch_dtype", "model_config", "trust_remote_code"),
             relies_on="hard-codes attn_implementation=\"flash_attention_2\" (no flash-attn on CPU)",
             why="replaced on the CPU platform, while flash-attn is missing, by the same load with the configured "
                 "attention", used_by=(_WORKAROUNDS,), source_has=('attn_implementation="flash_attention_2"',)),
    Contract("verl.plugin.platform:PlatformRegistry", kind="class", public=True,
             source_has=("def register(", "def get("), relies_on="register(name) and get(name)",
             why="the 'cpu' platform; doctor asks it", used_by=("agentic_verl/cpu/platform.py", _DOCTOR)),
    Contract(f"{_FSDP}:FSDPEngineWithLMHead", kind="class",
             relies_on="verl's FSDP actor engine (device-agnostic)", why="registered for device 'cpu'",
             used_by=("agentic_verl/cpu/platform.py",)),
    Contract(f"{_FSDP}:FSDPEngineWithValueHead", kind="class",
             relies_on="verl's FSDP critic engine (device-agnostic)", why="registered for device 'cpu'",
             used_by=("agentic_verl/cpu/platform.py",)),
    Contract("verl.plugin.platform:PlatformBase", kind="class", public=True,
             relies_on="every method PlatformCPU defines is one of PlatformBase's", why="the 'cpu' platform",
             used_by=("agentic_verl/cpu/platform.py",),
             overridden_by="agentic_verl.cpu.platform:PlatformCPU", own=("_device_module",)),
    Contract("verl.workers.engine.base:EngineRegistry.register", public=True,
             params=("model_type", "backend", "device"), relies_on="registers an engine class for a device",
             why="verl's FSDP engines for device 'cpu'", used_by=("agentic_verl/cpu/platform.py",)),
    Contract("verl.experimental.reward_loop.reward_manager:get_reward_manager_cls", public=True,
             relies_on="raises ValueError on an unknown name", why="doctor's registration check",
             used_by=(_DOCTOR,), source_has=("raise ValueError(",)),
    Contract("verl.trainer.ppo.core_algos:get_adv_estimator_fn", public=True,
             relies_on="raises ValueError on an unknown name", why="doctor's registration check",
             used_by=(_DOCTOR,), source_has=("raise ValueError(",)),
    Contract("verl.trainer.ppo.core_algos:get_policy_loss_fn", public=True,
             relies_on="raises ValueError on an unknown name", why="doctor's registration check",
             used_by=(_DOCTOR,), source_has=("raise ValueError(",)),
    Contract("verl.workers.rollout.replica:RolloutReplicaRegistry._registry", kind="dict",
             relies_on="name -> loader of every rollout backend",
             why="the public RolloutReplicaRegistry.get(name) imports the backend (vLLM) to answer; doctor only "
                 "asks whether a name is registered", used_by=(_DOCTOR,)),
)

VERL_VLLM_WEIGHT_SYNC = (
    Contract("verl.workers.rollout.vllm_rollout.utils:vLLMColocateWorkerExtension.update_weights_from_ipc",
             relies_on="one call per weight sync, on vLLM's worker (self.model_runner.model)",
             why="tests' weight-sync log (AGENTIC_VERL_WEIGHT_SYNC_LOG)", used_by=(_VLLM_PLUGIN,),
             source_has=("self._update_weights(",)),
    Contract("verl.workers.rollout.vllm_rollout.utils:vLLMColocateWorkerExtension._update_weights",
             params=("weights",), relies_on="loads one received bucket into vLLM's model",
             why="the negative control (AGENTIC_VERL_SKIP_WEIGHT_SYNC) drops buckets here", used_by=(_VLLM_PLUGIN,)),
)

VLLM = (
    Contract("vllm.model_executor.layers.linear:UnquantizedLinearMethod.process_weights_after_loading",
             params=("layer",),
             relies_on="on CPU it prepacks with dispatch_cpu_unquantized_gemm(layer, remove_weight=True), dropping "
                       "the weight verl's weight sync reloads",
             why="replaced on vLLM's CPU platform by the same call with remove_weight=False", used_by=(_VLLM_PLUGIN,),
             source_has=("dispatch_cpu_unquantized_gemm(layer, remove_weight=True)",)),
    Contract("vllm.model_executor.layers.utils:dispatch_cpu_unquantized_gemm", params=("layer", "remove_weight"),
             relies_on="keeps layer.weight when remove_weight=False", why="see process_weights_after_loading",
             used_by=(_VLLM_PLUGIN,)),
    Contract("vllm.v1.worker.gpu_input_batch:InputBatch.add_request", params=("request",),
             relies_on="stores request.generator as the request's sampling generator (self.generators); the model "
                       "runner rewinds it with set_offset(get_offset() - 4) for a token it drops",
             why="the plugin swaps a seeded request's CPU generator for one whose offset calls do nothing",
             used_by=(_VLLM_PLUGIN,), source_has=("self.generators[req_index] = request.generator",)),
    Contract("vllm.v1.worker.gpu_model_runner:GPUModelRunner._bookkeeping_sync",
             relies_on="the only caller of a request generator's get_offset/set_offset (the dropped-token rewind)",
             why="see InputBatch.add_request", used_by=(_VLLM_PLUGIN,),
             source_has=("gen.set_offset(gen.get_offset() - 4)",)),
    Contract("vllm.platforms:current_platform.is_cpu", relies_on="True on vLLM's CPU build",
             why="the vLLM plugin does nothing on other platforms", used_by=(_VLLM_PLUGIN,)),
    Contract("vllm:AsyncEngineArgs", kind="class", public=True,
             params=("model", "tokenizer", "dtype", "max_model_len", "max_num_seqs", "seed", "gpu_memory_utilization",
                     "enforce_eager", "logprobs_mode", "disable_log_stats"),
             relies_on="the engine arguments we pass", why="the in-process engine for eval and SFT data",
             used_by=(_ENGINE,)),
    Contract("vllm.v1.engine.async_llm:AsyncLLM", kind="class", public=True,
             relies_on="from_engine_args(args), generate(prompt, params, request_id), abort(ids), "
                       "shutdown(timeout=), model_config",
             why="the in-process engine for eval and SFT data", used_by=(_ENGINE,),
             source_has=("def from_engine_args(", "async def generate(", "async def abort(",
                         "def shutdown(self, timeout")),
    Contract("vllm:SamplingParams", kind="class", public=True, params=("max_tokens", "logprobs", "output_kind"),
             relies_on="verl's translation of sampling parameters", why="the in-process engine",
             used_by=(_ENGINE,)),
    Contract("vllm.sampling_params:RequestOutputKind.FINAL_ONLY", kind="value", public=True,
             relies_on="one final output per request", why="the in-process engine", used_by=(_ENGINE,)),
    Contract("vllm:TokensPrompt", kind="class", public=True, source_has=("prompt_token_ids",),
             relies_on="a prompt given as token ids", why="the in-process engine", used_by=(_ENGINE,)),
)

VERL_ADVANTAGE = (
    Contract("verl.trainer.ppo.core_algos:register_adv_est", public=True,
             relies_on="registers an estimator under a name for algorithm.adv_estimator", why="gigpo",
             used_by=(_GIGPO,)),
    Contract("verl.trainer.ppo.core_algos:compute_grpo_outcome_advantage",
             params=("token_level_rewards", "response_mask", "index", "norm_adv_by_std_in_grpo"),
             relies_on="(advantages, returns), each trajectory's GRPO advantage on its response tokens",
             why="gigpo's episode-level term is verl's GRPO, so all-distinct states give GRPO exactly",
             used_by=(_GIGPO,)),
    Contract("verl.trainer.ppo.v1.trainer_base:PPOTrainer._compute_advantage", params=("batch", "metrics"),
             relies_on="its local `batch` (a KVBatchMeta) holds the keys of the rows it passes, in that order, to the "
                       "advantage estimator",
             why="gigpo reads each row's anchor states (extra_fields) for those keys: verl passes an estimator no "
                 "per-row data beyond tensors and uid, and reorders rows after sampling",
             used_by=(_GIGPO,),
             source_has=("data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, "
                         "select_fields=fields)", "compute_advantage_for_multi_trajectories(")),
)

# (title, contracts): docs/contracts.md has one table per group, under this title
GROUPS: tuple[tuple[str, tuple[Contract, ...]], ...] = (
    ("SFT trainer and losses", VERL_SFT),
    ("Agent loops", VERL_AGENT_LOOPS),
    ("verl's ToolAgentLoop (`tool_agent_traced`)", VERL_TOOL_AGENT_LOOP),
    ("Tools", VERL_TOOLS),
    ("Rewards and training metrics", VERL_REWARDS_AND_METRICS),
    ("Advantage estimator (GiGPO)", VERL_ADVANTAGE),
    ("CPU platform and doctor", VERL_CPU),
    ("verl's vLLM weight sync (CPU plugin, test instrumentation)", VERL_VLLM_WEIGHT_SYNC),
    ("vLLM", VLLM),
)
CONTRACTS: tuple[Contract, ...] = tuple(contract for _, group in GROUPS for contract in group)
