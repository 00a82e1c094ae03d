"""The ASGI application: OpenAI's Chat Completions endpoints on Starlette.

Routes: ``POST /v1/chat/completions`` (SSE with ``stream: true``), ``GET /v1/models``,
``GET /v1/models/{id}``, ``GET /health``. The handler's path, in order:

1. read the body within the size limit (413) and decode it (400);
2. check it (:mod:`~autoparser.serve.request`; 400 / 404 for an unknown model);
3. plan the generation in a thread (:mod:`~autoparser.serve.plan`: template render, token count,
   grammar; 400 for a refused conversation, a prompt over the context, an unusable tool schema);
4. queue it on the worker (:mod:`~autoparser.serve.worker`; 429 when full) and wait for its first
   item while watching for the client to leave (a client gone while its request waits or
   generates cancels the job, so the pipeline is free at the next token);
5. answer: one ``chat.completion``, or a stream of ``chat.completion.chunk`` built by
   :class:`autoparser.openai.ChunkStream` from the parsed events, ``data: [DONE]`` last.

Errors before the first byte of a response are HTTP errors with OpenAI's body; an error after a
stream has started is sent as an ``{"error": ...}`` event (what OpenAI's clients raise on).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from autoparser.openai import ChunkStream, completion_from_result, sse, sse_done
from autoparser.serve.config import ServeConfig
from autoparser.serve.errors import ApiError, bad_request
from autoparser.serve.model import ServedModel
from autoparser.serve.plan import Plan, make_plan
from autoparser.serve.request import ChatRequest, parse_chat_request
from autoparser.serve.worker import Failure, Item, Job, Outcome, Worker

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["create_app"]

log = logging.getLogger("autoparser.serve")

_GONE = Failure(ApiError(499, "the client went away", code="client_closed"), started=False)
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def create_app(model: ServedModel, config: ServeConfig | None = None) -> Starlette:
    """The Starlette app serving ``model``; its lifespan starts and stops the generation worker."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    cfg = config if config is not None else ServeConfig()
    server = _Server(model, cfg)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        server.worker.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, server.worker.stop, cfg.shutdown_timeout)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return _error_response(ApiError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}",
                                        code=code, headers=exc.headers))

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return _error_response(exc)

    async def crash(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return _error_response(ApiError(500, f"internal error ({type(exc).__name__})", type="server_error"))

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", server.chat, methods=["POST"]),
            Route("/v1/models", server.models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", server.model_card, methods=["GET"]),
            Route("/health", server.health, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, ApiError: api_error, Exception: crash},
        lifespan=lifespan,
    )
    app.state.server = server
    return app


def _error_response(exc: ApiError) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)


class _Server:
    """The handlers, sharing one model, one config and one worker."""

    def __init__(self, model: ServedModel, config: ServeConfig) -> None:
        self.model = model
        self.config = config
        self.worker = Worker(model, config.max_queue)

    # -- small endpoints ------------------------------------------------------------------------

    def _card(self) -> dict[str, Any]:
        return {"id": self.model.name, "object": "model", "created": self.model.created, "owned_by": "autoparser"}

    async def models(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": [self._card()]})

    async def model_card(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        if request.path_params["model_id"] != self.model.name:
            raise ApiError(404, f"The model '{request.path_params['model_id']}' does not exist",
                           param="model", code="model_not_found")
        return JSONResponse(self._card())

    async def health(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        stopping = self.worker.stopping
        body = {"status": "stopping" if stopping else "ok", "model": self.model.name, **self.worker.stats()}
        return JSONResponse(body, status_code=503 if stopping else 200)

    # -- chat completions -----------------------------------------------------------------------

    async def chat(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse, Response, StreamingResponse

        body = await self._read_json(request)
        req = parse_chat_request(body, [self.model.name])
        plan = await run_in_threadpool(make_plan, self.model, req, self.config)
        job = Job(plan, asyncio.get_running_loop())
        self.worker.submit(job)
        watch = asyncio.create_task(_watch_disconnect(request, job))
        try:
            first = await job.items.get()
            if isinstance(first, Failure) and not first.started:
                if first is _GONE:
                    return Response(status_code=499)
                raise self._failure(first, plan)
            if req.stream:
                watch.cancel()  # from here Starlette's StreamingResponse watches the connection
                return StreamingResponse(self._stream(job, first, req, plan), media_type="text/event-stream",
                                         headers=_SSE_HEADERS)
            end = await _drain_to_end(job, first)
        finally:
            watch.cancel()
        if isinstance(end, Failure):
            if end is _GONE:
                return Response(status_code=499)
            raise self._failure(end, plan)
        return JSONResponse(self._completion(end, plan))

    async def _read_json(self, request: Request) -> Any:
        """The body as JSON, within the size limit (checked on the declared length and as it arrives)."""
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        too_big = ApiError(413, f"the request body is over the limit of {limit} bytes", code="request_too_large")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_big
        data = bytearray()
        async for part in request.stream():
            data += part
            if len(data) > limit:
                raise too_big
        try:
            return json.loads(bytes(data))
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request(f"We could not parse the JSON body of your request: {exc}", code="invalid_json") from exc

    def _failure(self, failure: Failure, plan: Plan) -> ApiError:
        """The HTTP error for a generation that failed before streaming anything."""
        exc = failure.error
        if isinstance(exc, ApiError):
            return exc
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if plan.grammar is not None and isinstance(exc, RuntimeError):
            return bad_request(f"OpenVINO GenAI could not compile the grammar for these tools: {first}", "tools",
                               "grammar_error")
        return ApiError(500, f"generation failed: {type(exc).__name__}: {first}", type="server_error")

    def _usage(self, plan: Plan, outcome: Outcome) -> dict[str, int]:
        return {"prompt_tokens": plan.prompt_tokens, "completion_tokens": outcome.completion_tokens,
                "total_tokens": plan.prompt_tokens + outcome.completion_tokens}

    def _completion(self, outcome: Outcome, plan: Plan) -> dict[str, Any]:
        result = outcome.result
        if outcome.hit_limit and result.finish == "stop":
            result = dataclasses.replace(result, finish="length")
        return completion_from_result(result, model=self.model.name, created=None,
                                      usage=self._usage(plan, outcome), reasoning_key=self.config.reasoning_field)

    async def _stream(self, job: Job, first: Item, req: ChatRequest, plan: Plan) -> AsyncIterator[str]:
        """SSE frames: every item already waiting is sent as one write (chunks merged by kind)."""
        chunks = ChunkStream(model=self.model.name, include_usage=req.include_usage,
                             reasoning_key=self.config.reasoning_field)
        finished = False
        try:
            item = first
            while True:
                events, end = _take(item, job)
                frames = [sse(c) for c in chunks.push(events)] if events else []
                if isinstance(end, Outcome):
                    usage = self._usage(plan, end) if req.include_usage else None
                    frames += [sse(c) for c in chunks.finish(length=end.hit_limit, usage=usage)]
                    frames.append(sse_done())
                elif isinstance(end, Failure):
                    frames += [sse(self._failure(end, plan).body()), sse_done()]
                if frames:
                    yield "".join(frames)
                if end is not None:
                    finished = True
                    return
                item = await job.items.get()
        finally:
            if not finished:  # the client left mid-stream (the task was cancelled): free the pipeline
                job.cancel()


def _take(item: Item, job: Job) -> tuple[list[Any], Outcome | Failure | None]:
    """``item`` plus every item already queued: the events, and the end if it has come."""
    events: list[Any] = []
    while True:
        if not isinstance(item, list):
            return events, item
        events.extend(item)
        try:
            item = job.items.get_nowait()
        except asyncio.QueueEmpty:
            return events, None


async def _drain_to_end(job: Job, item: Item) -> Outcome | Failure:
    """Wait for the end of a job (the events are in the Outcome's result)."""
    while isinstance(item, list):
        item = await job.items.get()
    return item


async def _watch_disconnect(request: Request, job: Job) -> None:
    """Cancel ``job`` when the client disconnects, and wake its handler."""
    while True:
        message: Mapping[str, Any] = await request.receive()
        if message["type"] == "http.disconnect":
            job.cancel()
            job.items.put_nowait(_GONE)
            return
