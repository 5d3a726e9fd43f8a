//! Connecting to an upstream server and keeping it connected: the handshake, the
//! supervisor that restarts it after a crash, and listing its tools.

use super::super::process::StderrTail;
use super::*;

/// How often accepted changes of quarantined skills are looked for.
const RELEASE_EVERY: Duration = Duration::from_secs(1);

impl Server {
    pub(super) async fn supervise(self: Arc<Self>) {
        loop {
            if self.shutdown.is_cancelled() {
                break;
            }
            let reason = match self.connect_once().await {
                Ok((running, ct)) => match self.serve(running, ct).await {
                    Some(reason) => reason,
                    None => break,
                },
                Err(reason) => reason,
            };
            let reason = upstream_words(&reason, &self.config.scrubber);
            tracing::warn!(server = %self.config.name, "{reason}");
            let after = {
                let mut shared = self.shared();
                shared.peer = None;
                shared.last_error = Some(reason.clone());
                shared.breaker.record_failure(Instant::now())
            };
            let wait_until = match after {
                AfterFailure::Restart(wait) => {
                    let attempt = self.failures();
                    crate::telemetry::upstream_restart(&self.config.name);
                    self.set_state(ServerState::Restarting { reason, attempt });
                    Instant::now() + wait
                }
                AfterFailure::Open(until) => {
                    let failures = self.failures();
                    self.set_state(ServerState::Unavailable {
                        reason,
                        failures,
                        until,
                    });
                    until
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wait_until.into()) => {}
                _ = self.shutdown.cancelled() => break,
            }
        }
        self.stop_now();
        self.set_state(ServerState::Stopped);
    }

    /// Starts or reaches the server and starts the protocol: `server/discover`
    /// first, `initialize` for servers of the session revisions (see
    /// `lifecycle.rs`).
    async fn connect_once(
        &self,
    ) -> Result<(RunningService<RoleClient, Handler>, CancellationToken), String> {
        match self.config.revision {
            UpstreamRevision::Session => {
                return self
                    .connect_with(lifecycle::initialize_only())
                    .await
                    .map_err(Refused::into_reason);
            }
            UpstreamRevision::Stateless => {
                return self
                    .connect_with(lifecycle::discover_only())
                    .await
                    .map_err(Refused::into_reason);
            }
            UpstreamRevision::Auto => {}
        }
        match self.connect_with(lifecycle::discover_first()).await {
            Err(Refused::SessionOnly(reason)) => {
                tracing::debug!(server = %self.config.name, "{reason}; connecting again with `initialize`");
                self.connect_with(lifecycle::initialize_only())
                    .await
                    .map_err(Refused::into_reason)
            }
            other => other.map_err(Refused::into_reason),
        }
    }

    async fn connect_with(
        &self,
        lifecycle: ClientLifecycleMode,
    ) -> Result<(RunningService<RoleClient, Handler>, CancellationToken), Refused> {
        let handler = Handler::new(
            self.config.name.clone(),
            self.refresh.clone(),
            self.events.clone(),
            self.config.scrubber.clone(),
            self.relay.clone(),
        );
        let connect = humantime::format_duration(self.config.connect_timeout);
        let label = &self.label;
        let ct = self.shutdown.child_token();
        match &self.config.transport {
            transport @ Transport::Stdio { program, .. } => {
                let (process, pipes) =
                    ServerProcess::start(&self.config.name, transport, &self.config.scrubber)
                        .await
                        .map_err(|e| {
                            Refused::Other(format!(
                                "{label} could not be started (`{}`: {e}); check `command` and that the program is installed",
                                program.display()
                            ))
                        })?;
                let transport = Sequenced::new(
                    AsyncRwTransport::new_client(pipes.stdout, pipes.stdin),
                    self.relay.clone(),
                );
                let handshake =
                    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct.clone());
                match tokio::time::timeout(self.config.connect_timeout, handshake).await {
                    Ok(Ok(running)) => {
                        self.shared().process = Some(process);
                        Ok((running, ct))
                    }
                    Ok(Err(e)) => {
                        let stderr = process.stderr().clone();
                        let status = process.kill().await;
                        let reason = format!(
                            "{label} failed the MCP handshake ({e}){}{}",
                            exit_words(status),
                            stderr_words(&stderr)
                        );
                        Err(Refused::of(&e, reason))
                    }
                    Err(_) => {
                        let stderr = process.stderr().clone();
                        process.kill().await;
                        Err(Refused::Other(format!(
                            "{label} did not complete the MCP handshake within {connect}{}",
                            stderr_words(&stderr)
                        )))
                    }
                }
            }
            Transport::Http { url, headers } => {
                let mut map = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        Refused::Other(format!("{label}: `{name}` is not an HTTP header name"))
                    })?;
                    let mut value = http::HeaderValue::from_str(value.expose()).map_err(|_| {
                        Refused::Other(format!(
                            "{label}: the value of header `{name}` is not a valid header value"
                        ))
                    })?;
                    value.set_sensitive(true);
                    map.insert(name, value);
                }
                let client = checked_http_client(&self.config.network, url)
                    .await
                    .map_err(|reason| Refused::Other(format!("{label} at {url}: {reason}")))?;
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let transport = Sequenced::new(
                    StreamableHttpClientTransport::with_client(client, config),
                    self.relay.clone(),
                );
                match tokio::time::timeout(
                    self.config.connect_timeout,
                    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct.clone()),
                )
                .await
                {
                    Ok(Ok(running)) => Ok((running, ct)),
                    Ok(Err(e)) => {
                        let reason = format!("{label} at {url} could not be reached ({e})");
                        Err(Refused::of(&e, reason))
                    }
                    Err(_) => Err(Refused::Other(format!(
                        "{label} at {url} did not complete the MCP handshake within {connect}"
                    ))),
                }
            }
        }
    }

    /// Lists tools, then watches the connection until it ends. Returns why it
    /// ended, or `None` when toolgate is shutting the server down.
    async fn serve(
        &self,
        running: RunningService<RoleClient, Handler>,
        cancel: CancellationToken,
    ) -> Option<String> {
        let peer = running.peer().clone();
        let info = running.peer_info().map(|info| {
            let server = info.server_info.as_ref();
            server.map_or_else(String::new, |s| format!("{} {}", s.name, s.version))
        });
        let revision = running.peer_info().map(|info| Revision::of(&info));
        if let Err(reason) = self.list_tools(&peer).await {
            let _ = running.cancel().await;
            self.end_process().await;
            return Some(reason);
        }
        // A server's skills are beside its tools: failing to list them leaves
        // the tools served.
        if let Err(reason) = self.list_skills(&peer).await {
            tracing::warn!(server = %self.config.name, "{}", self.config.scrubber.scrub(&reason));
        }
        {
            let mut shared = self.shared();
            shared.peer = Some(peer.clone());
            shared.server_info = info.filter(|i| !i.is_empty());
            shared.revision = revision.clone();
        }
        if let Some(revision) = &revision {
            tracing::debug!(server = %self.config.name, "connected; it speaks MCP {revision}");
        }
        self.set_state(ServerState::Ready);
        if revision.as_ref().is_some_and(|r| r.stateless) {
            self.listen_for_changes(&peer, cancel.clone());
        }
        let healthy_at = Instant::now() + self.shared().breaker.policy().healthy_after;
        let mut healthy = false;
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let mut exited = self.shared().process.as_ref().map(ServerProcess::exited);
        let process_exit = async {
            match &mut exited {
                Some(exited) => {
                    let _ = exited.wait_for(|gone| *gone).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::pin!(process_exit);
        // A quarantined skill is not readable, so no read releases it: its
        // acceptance (perhaps in another process) is looked for now and then.
        let mut accepted = tokio::time::interval(RELEASE_EVERY);
        accepted.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let ended = loop {
            tokio::select! {
                _ = &mut waiting => break "closed the connection",
                _ = &mut process_exit => {
                    cancel.cancel();
                    let _ = (&mut waiting).await;
                    break "exited";
                }
                _ = self.refresh.notified() => {
                    let tools = self.list_tools(&peer).await;
                    let skills = self.list_skills(&peer).await;
                    for reason in [tools, skills].into_iter().filter_map(Result::err) {
                        tracing::warn!(server = %self.config.name, "{}", self.config.scrubber.scrub(&reason));
                    }
                }
                _ = self.reconnect.notified() => {
                    cancel.cancel();
                    let _ = (&mut waiting).await;
                    break "stopped answering";
                }
                _ = accepted.tick(), if self.skills.is_some() => self.release_accepted_skills(),
                _ = tokio::time::sleep_until(healthy_at.into()), if !healthy => {
                    healthy = true;
                    self.shared().breaker.record_success();
                }
                _ = self.shutdown.cancelled() => {
                    // Closing the transport closes the server's stdin: the orderly stop.
                    let _ = (&mut waiting).await;
                    self.shared().peer = None;
                    let process = self.shared().process.take();
                    if let Some(process) = process {
                        process.stop(STOP_GRACE).await;
                    }
                    return None;
                }
            }
        };
        self.shared().peer = None;
        let (status, stderr) = self.end_process().await;
        let what = status
            .and_then(exit_phrase)
            .unwrap_or_else(|| ended.to_owned());
        Some(format!(
            "{} {what}{}",
            self.label,
            stderr.map(|s| stderr_words(&s)).unwrap_or_default()
        ))
    }

    /// On the stateless revision a server tells of list changes only to a
    /// subscription: one is held open for the connection's life, and whatever
    /// it hears re-lists the tools and skills.
    fn listen_for_changes(&self, peer: &Peer<RoleClient>, cancel: CancellationToken) {
        let (peer, refresh) = (peer.clone(), self.refresh.clone());
        let name = self.config.name.clone();
        tokio::spawn(async move {
            let filter = rmcp::model::SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .build();
            let mut subscription = tokio::select! {
                listening = peer.listen(filter) => match listening {
                    Ok(subscription) => subscription,
                    Err(e) => {
                        tracing::debug!(server = %name, "no subscription to list changes ({e}); lists are read again on reconnect");
                        return;
                    }
                },
                _ = cancel.cancelled() => return,
            };
            loop {
                tokio::select! {
                    heard = subscription.next() => match heard {
                        Ok(Some(_)) => refresh.notify_one(),
                        _ => break,
                    },
                    _ = cancel.cancelled() => break,
                }
            }
        });
    }

    /// Kills what is left of a stdio server's group and reaps it.
    async fn end_process(&self) -> (Option<std::process::ExitStatus>, Option<StderrTail>) {
        let process = self.shared().process.take();
        match process {
            Some(process) => {
                let stderr = process.stderr().clone();
                (process.kill().await, Some(stderr))
            }
            None => (None, None),
        }
    }

    /// Lists the server's tools and checks each against its pin.
    async fn list_tools(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let label = &self.label;
        let listed =
            match tokio::time::timeout(self.config.list_timeout, peer.list_all_tools()).await {
                Ok(Ok(tools)) => tools,
                Ok(Err(e)) => return Err(format!("{label} failed to list its tools ({e})")),
                Err(_) => {
                    return Err(format!(
                        "{label} did not list its tools within {}",
                        humantime::format_duration(self.config.list_timeout)
                    ));
                }
            };
        let mut tools = IndexMap::new();
        let mut skipped = Vec::new();
        for tool in listed {
            let value = serde_json::to_value(&tool).unwrap_or(Value::Null);
            let remote = match remote_tool(&self.config.name, &value, &self.config.effects) {
                Ok(mut remote) => {
                    remote.descriptor.output = self.config.output_of(&remote.name);
                    remote.descriptor.cost = self.config.cost_of(&remote.name);
                    remote
                }
                Err(reason) => {
                    let name = toolgate_core::escape_for_terminal(&tool.name).into_owned();
                    tracing::warn!(server = %self.config.name, "tool `{name}` is left out: {reason}");
                    skipped.push((name, reason));
                    continue;
                }
            };
            if tools.contains_key(&remote.name) {
                skipped.push((remote.name.clone(), "the server lists it twice".to_owned()));
                continue;
            }
            let quarantine = self.check_pin(&remote);
            if let Some(q) = &quarantine {
                tracing::warn!(
                    server = %self.config.name,
                    "`{}` is quarantined: {}",
                    remote.descriptor.name,
                    q.reason(&self.label)
                );
            }
            tools.insert(
                remote.name.clone(),
                ListedTool {
                    tool: remote,
                    quarantine,
                },
            );
        }
        {
            let mut shared = self.shared();
            shared.tools = tools;
            shared.skipped = skipped;
        }
        let _ = self.events.send(UpstreamEvent::ToolsChanged {
            server: self.config.name.clone(),
        });
        Ok(())
    }
}

/// `exited with status 3`, `was killed by signal 9`.
fn exit_phrase(status: std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Some(format!("exited with status {code}")),
        (None, Some(signal)) => Some(format!("was killed by signal {signal}")),
        _ => None,
    }
}

fn exit_words(status: Option<std::process::ExitStatus>) -> String {
    status
        .and_then(exit_phrase)
        .map(|phrase| format!(" (it {phrase})"))
        .unwrap_or_default()
}

fn stderr_words(stderr: &StderrTail) -> String {
    stderr
        .summary(3)
        .map(|s| format!("; its last words on stderr: {s}"))
        .unwrap_or_default()
}
