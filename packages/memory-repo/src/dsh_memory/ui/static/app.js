// The dsh-memory settings page. Plain DOM, no framework, no build step.
// Every text from the server is inserted with textContent (never innerHTML): record paths
// and run ids are data, not markup. The page talks only to POST /api/memory/<method>.
"use strict";

(function () {
  const DELETE_TIMEOUT_SECONDS = 15;
  const RUN_HISTORY_LIMIT = 8;

  // -- texts ---------------------------------------------------------------------------

  const TEXT = {
    en: {
      title: "Long-term memory",
      refresh: "Refresh",
      langSwitch: "中文",
      tokenMissing:
        "This page needs its access token. Open the full address printed by `dsh-memory ui` (it ends with #token=…).",
      loading: "Loading…",
      switchTitle: "Memory switch",
      switchLabel: "Use long-term memory",
      saving: "saving…",
      saved: "Saved.",
      promptOn:
        "The agent's system prompt includes the memory section (instructions and a snapshot of summary.md).",
      promptOff: "The agent's system prompt has no memory section: nothing is recalled or injected.",
      repoTitle: "Repository",
      dataFiles: "Data files",
      emptyLabel: "Empty",
      dirtyLabel: "Uncommitted changes in memory files",
      schemaLabel: "Record schema version",
      legacyLabel: "Records without front matter (legacy)",
      root: "Location",
      yes: "yes",
      no: "no",
      migrateButton: "Migrate {n} legacy records…",
      migratePlanTitle: "These records will get front matter (their text is kept as it is):",
      migrateConfirm: "Migrate these {n} records",
      migrateDone: "Migrated {n} records (apply commit {commit}).",
      migrateNothing: "Nothing to migrate.",
      cancel: "Cancel",
      remoteTitle: "Git remote",
      remoteNone:
        "No Git remote is set: this memory lives on this machine only. To share it between machines, run `dsh-memory remote set URL` with a private repository (see “Several machines” in the README).",
      remoteUrl: "URL",
      remoteBranch: "Branch",
      remoteSync: "Since the last fetch",
      remoteCounts: "{ahead} commit(s) to push, {behind} to pull",
      remoteNotFetched: "not fetched yet",
      remoteLastPull: "Last pull",
      remoteLastPush: "Last push",
      remoteNever: "never",
      remoteConflicts: "{n} conflicting record(s) kept beside their originals",
      remoteInvalid: "This URL is refused (remote-invalid): nothing is fetched or pushed until it is set again with `dsh-memory remote set URL`.",
      remoteHow: "This page only shows the remote. Exchange changes with `dsh-memory pull` and `dsh-memory push`, or `dsh-memory-sync --remote`.",
      runsTitle: "Runs",
      lastRun: "Last run",
      noRuns: "No run has been recorded yet.",
      history: "Recent runs",
      changedFiles: "files changed: {n}",
      applyCommit: "apply commit",
      rollbackButton: "Roll back this run…",
      rollbackExplain:
        "Roll back run {id}? A new commit restores memory to how it was before this run. Nothing is deleted from history: the run stays listed and can be inspected in Git.",
      rollbackConfirm: "Yes, roll back",
      rollbackDone: "Run {id} rolled back (rollback commit {commit}).",
      previewsTitle: "Pending previews",
      noPreviews: "No preview is waiting.",
      previewSessions: "from {n} session log(s)",
      previewExpires: "expires {when}",
      previewCreated: "created {when}",
      applyPreview: "Apply…",
      discardPreview: "Discard…",
      applyExplain: "Apply preview {id}? Its changes become a normal memory run (recovery and apply commits).",
      discardExplain: "Discard preview {id}? Its proposed changes are removed and memory stays as it is.",
      applyConfirm: "Yes, apply",
      discardConfirm: "Yes, discard",
      applyDone: "Preview {id} applied (apply commit {commit}).",
      discardDone: "Preview {id} discarded.",
      healthTitle: "Health",
      healthy: "No problems found.",
      whatToDo: "What to do: ",
      busy: "A {operation} run is in progress right now (started {when}).",
      deleteTitle: "Delete memory",
      deleteIntro: "Clears everything the agent remembers, in one commit.",
      deleteStart: "Delete memory…",
      deleteExplain:
        "This clears summary.md, handbook/, rollouts/ and archive/. Before that, a recovery commit keeps everything as it is now, so it stays recoverable from the memory's Git history. Memory stays enabled: new sessions will build it up again.",
      deleteContinue: "Continue",
      deleteTypePrompt: "Type {word} to confirm.",
      deleteWord: "DELETE",
      deleteCountdown: "This cancels itself in {n} s.",
      deleteNow: "Delete memory now",
      deleteTimedOut: "Delete cancelled: the time to confirm ran out. Nothing was changed.",
      deleteCancelled: "Delete cancelled. Nothing was changed.",
      deleteDone:
        "Memory deleted: {n} files cleared. Recovery commit {recovery} holds everything as it was; clear commit {clear} is the empty state.",
      deleteAlreadyEmpty: "Memory was already empty; nothing was changed.",
      unknownCode: "The operation failed.",
    },
    zh: {
      title: "长期记忆",
      refresh: "刷新",
      langSwitch: "English",
      tokenMissing: "此页面需要访问令牌。请打开 `dsh-memory ui` 打印的完整地址（以 #token=… 结尾）。",
      loading: "加载中…",
      switchTitle: "记忆开关",
      switchLabel: "使用长期记忆",
      saving: "正在保存…",
      saved: "已保存。",
      promptOn: "智能体的系统提示包含记忆部分（使用说明和 summary.md 的快照）。",
      promptOff: "智能体的系统提示不包含记忆部分：不会回忆或注入任何记忆。",
      repoTitle: "记忆库",
      dataFiles: "数据文件",
      emptyLabel: "为空",
      dirtyLabel: "记忆文件有未提交的修改",
      schemaLabel: "记录格式版本",
      legacyLabel: "没有前置元数据的旧记录",
      root: "位置",
      yes: "是",
      no: "否",
      migrateButton: "迁移 {n} 条旧记录…",
      migratePlanTitle: "以下记录将添加前置元数据（正文保持不变）：",
      migrateConfirm: "迁移这 {n} 条记录",
      migrateDone: "已迁移 {n} 条记录（应用提交 {commit}）。",
      migrateNothing: "没有需要迁移的记录。",
      cancel: "取消",
      remoteTitle: "Git 远程仓库",
      remoteNone: "尚未设置 Git 远程仓库：此记忆只保存在本机。要在多台机器之间共享，请用一个私有仓库运行 `dsh-memory remote set URL`（见 README 的“Several machines”一节）。",
      remoteUrl: "地址",
      remoteBranch: "分支",
      remoteSync: "自上次获取以来",
      remoteCounts: "{ahead} 个提交待推送，{behind} 个待拉取",
      remoteNotFetched: "尚未获取",
      remoteLastPull: "最近一次拉取",
      remoteLastPush: "最近一次推送",
      remoteNever: "从未",
      remoteConflicts: "{n} 条冲突记录已保存在原记录旁边",
      remoteInvalid: "此地址被拒绝（remote-invalid）：在用 `dsh-memory remote set URL` 重新设置之前，不会获取或推送任何内容。",
      remoteHow: "此页面只显示远程仓库。请用 `dsh-memory pull` 和 `dsh-memory push`，或 `dsh-memory-sync --remote` 交换变更。",
      runsTitle: "运行记录",
      lastRun: "最近一次运行",
      noRuns: "尚无运行记录。",
      history: "近期运行",
      changedFiles: "{n} 个文件有变更",
      applyCommit: "应用提交",
      rollbackButton: "回滚此次运行…",
      rollbackExplain:
        "回滚运行 {id}？将新建一个提交，把记忆恢复到此次运行之前的状态。历史不会被删除：此次运行仍会列出，并可在 Git 中查看。",
      rollbackConfirm: "确认回滚",
      rollbackDone: "运行 {id} 已回滚（回滚提交 {commit}）。",
      previewsTitle: "待处理的预览",
      noPreviews: "没有待处理的预览。",
      previewSessions: "来自 {n} 个会话日志",
      previewExpires: "{when} 过期",
      previewCreated: "创建于 {when}",
      applyPreview: "应用…",
      discardPreview: "丢弃…",
      applyExplain: "应用预览 {id}？其变更将作为一次普通的记忆运行提交（恢复提交和应用提交）。",
      discardExplain: "丢弃预览 {id}？其提议的变更将被删除，记忆保持不变。",
      applyConfirm: "确认应用",
      discardConfirm: "确认丢弃",
      applyDone: "预览 {id} 已应用（应用提交 {commit}）。",
      discardDone: "预览 {id} 已丢弃。",
      healthTitle: "健康状况",
      healthy: "未发现问题。",
      whatToDo: "处理方法：",
      busy: "一次{operation}运行正在进行中（开始于 {when}）。",
      deleteTitle: "删除记忆",
      deleteIntro: "用一个提交清除智能体记住的所有内容。",
      deleteStart: "删除记忆…",
      deleteExplain:
        "这将清除 summary.md、handbook/、rollouts/ 和 archive/。清除之前会先创建一个恢复提交，保存当前的全部内容，因此仍可从记忆库的 Git 历史中恢复。记忆保持开启：之后的会话会重新积累记忆。",
      deleteContinue: "继续",
      deleteTypePrompt: "请输入“{word}”以确认。",
      deleteWord: "删除",
      deleteCountdown: "{n} 秒后自动取消。",
      deleteNow: "立即删除记忆",
      deleteTimedOut: "已取消删除：确认时间已过。没有任何改动。",
      deleteCancelled: "已取消删除。没有任何改动。",
      deleteDone: "记忆已删除：清除了 {n} 个文件。恢复提交 {recovery} 保存了删除前的全部内容；清除提交 {clear} 是清空后的状态。",
      deleteAlreadyEmpty: "记忆本来就是空的；没有任何改动。",
      unknownCode: "操作失败。",
    },
  };

  // A human sentence for every machine code the server can answer with.
  const CODES = {
    en: {
      "settings-unavailable": "The settings file cannot be read.",
      "settings-invalid-request": "The setting must be on or off.",
      "settings-write-failed": "The settings file could not be written.",
      "repo-unavailable": "The memory repository cannot be opened (is it initialised? run `dsh-memory init`).",
      "unsafe-layout": "The memory folder contains a symbolic link or another unsafe path, so nothing was read or changed.",
      "checkpoint-failed": "The recovery checkpoint could not be made, so nothing was deleted.",
      "clear-failed": "Memory could not be cleared; nothing was changed.",
      "commit-failed": "The change could not be committed safely; memory is as it was.",
      "operation-in-progress": "Another memory operation is running right now (another tab or a sync). Nothing was changed; try again when it has finished.",
      "interrupted-run": "An earlier run was interrupted and must be recovered first (see Health).",
      "migration-invalid-request": "The migration request was not valid.",
      "migration-failed": "The migration failed; memory is as it was.",
      "runs-invalid-request": "The run list request was not valid.",
      "rollback-invalid-confirmation": "The rollback was not confirmed.",
      "rollback-run-not-found": "This run is no longer in the journal.",
      "rollback-not-applicable": "This run cannot be rolled back: it was not applied, or it changed nothing.",
      "rollback-conflict": "Memory changed after this run (a later run or edit wrote to it). Rolling it back would also undo those newer changes, so it was refused. Roll back the newer runs first, newest first.",
      "rollback-failed": "The rollback could not be completed safely; memory is as it was.",
      "preview-invalid-request": "The preview id is not valid.",
      "preview-not-found": "This preview no longer exists.",
      "preview-expired": "This preview has expired and can no longer be applied.",
      "live-memory-changed": "Memory changed since this preview was made, so it was not applied.",
      "preview-apply-failed": "The preview could not be applied; memory is as it was.",
      "search-invalid-request": "The search request was not valid.",
      "search-failed": "The search failed.",
      "context-invalid-request": "The context request was not valid.",
      "context-failed": "The context could not be read.",
      "usage-invalid": "The usage file is damaged.",
      "usage-busy": "The usage file is busy.",
      "unknown-method": "This version of dsh-memory does not offer this action.",
      "ui-forbidden-token": "The page's access token is missing or wrong. Open the address printed by `dsh-memory ui` again.",
      "ui-forbidden-origin": "The request came from another site and was refused.",
      "ui-forbidden-host": "The request named another host and was refused.",
      "ui-invalid-request": "The page sent a request the server does not accept.",
      "network-error": "The settings server cannot be reached. Is `dsh-memory ui` still running?",
      "remote-invalid": "The remote URL is refused.",
      "remote-unavailable": "The remote could not be reached (network or credentials); nothing was changed.",
      "remote-content-refused": "The remote's history holds files no memory holds; nothing was pulled.",
      "unsafe-config": "The memory repository's own Git config would redirect the exchange or run a program; nothing was changed.",
      "push-rejected": "The remote has changes this machine has not pulled yet; nothing was pushed.",
      "push-unjournaled-deletion": "The push would delete records no run deleted; nothing was pushed.",
    },
    zh: {
      "settings-unavailable": "无法读取设置文件。",
      "settings-invalid-request": "该设置只能是开或关。",
      "settings-write-failed": "无法写入设置文件。",
      "repo-unavailable": "无法打开记忆库（是否已初始化？请运行 `dsh-memory init`）。",
      "unsafe-layout": "记忆文件夹中有符号链接或其他不安全的路径，因此没有读取或修改任何内容。",
      "checkpoint-failed": "无法创建恢复检查点，因此没有删除任何内容。",
      "clear-failed": "无法清除记忆；没有任何改动。",
      "commit-failed": "无法安全地提交变更；记忆保持原样。",
      "operation-in-progress": "另一个记忆操作正在进行（另一个标签页或一次同步）。没有任何改动；请等它结束后再试。",
      "interrupted-run": "之前的一次运行被中断，需要先恢复（见“健康状况”）。",
      "migration-invalid-request": "迁移请求无效。",
      "migration-failed": "迁移失败；记忆保持原样。",
      "runs-invalid-request": "运行列表请求无效。",
      "rollback-invalid-confirmation": "回滚未经确认。",
      "rollback-run-not-found": "日志中已没有这次运行。",
      "rollback-not-applicable": "这次运行无法回滚：它没有被应用，或者没有改变任何内容。",
      "rollback-conflict": "这次运行之后记忆又有了新的修改（之后的运行或编辑）。回滚它会连带撤销这些更新的修改，因此被拒绝。请先从最新的开始，依次回滚之后的运行。",
      "rollback-failed": "无法安全地完成回滚；记忆保持原样。",
      "preview-invalid-request": "预览编号无效。",
      "preview-not-found": "该预览已不存在。",
      "preview-expired": "该预览已过期，不能再应用。",
      "live-memory-changed": "生成该预览之后记忆已有变化，因此没有应用。",
      "preview-apply-failed": "无法应用该预览；记忆保持原样。",
      "search-invalid-request": "搜索请求无效。",
      "search-failed": "搜索失败。",
      "context-invalid-request": "上下文请求无效。",
      "context-failed": "无法读取上下文。",
      "usage-invalid": "使用记录文件已损坏。",
      "usage-busy": "使用记录文件正忙。",
      "unknown-method": "此版本的 dsh-memory 不提供该操作。",
      "ui-forbidden-token": "页面的访问令牌缺失或错误。请重新打开 `dsh-memory ui` 打印的地址。",
      "ui-forbidden-origin": "请求来自其他网站，已被拒绝。",
      "ui-forbidden-host": "请求指向其他主机，已被拒绝。",
      "ui-invalid-request": "页面发送了服务器不接受的请求。",
      "network-error": "无法连接设置服务器。`dsh-memory ui` 是否仍在运行？",
      "remote-invalid": "远程仓库地址被拒绝。",
      "remote-unavailable": "无法连接远程仓库（网络或凭据问题）；没有任何改动。",
      "remote-content-refused": "远程仓库的历史中有记忆库不应包含的文件；没有拉取任何内容。",
      "unsafe-config": "记忆库自身的 Git 配置会重定向交换或运行程序；没有任何改动。",
      "push-rejected": "远程仓库有本机尚未拉取的变更；没有推送任何内容。",
      "push-unjournaled-deletion": "推送会删除没有任何运行删除过的记录；没有推送任何内容。",
    },
  };

  const WORDS = {
    en: {
      applied: "applied", no_change: "no change", failed: "failed", interrupted: "interrupted",
      rolled_back: "rolled back", running: "running", pending: "pending",
      "skipped-retry": "skipped (retry later)", rejected: "rejected", deferred: "deferred",
      sync: "sync", preview: "preview", migrate: "migration", rollback: "rollback", clear: "delete",
      pull: "pull", edit: "edit", "up-to-date": "up to date", "fast-forward": "fast-forward",
      merged: "merged", "merged-with-conflicts": "merged with conflicts", pushed: "pushed",
    },
    zh: {
      applied: "已应用", no_change: "无变更", failed: "失败", interrupted: "已中断",
      rolled_back: "已回滚", running: "运行中", pending: "待处理",
      "skipped-retry": "已跳过（稍后重试）", rejected: "已拒绝", deferred: "已推迟",
      sync: "同步", preview: "预览", migrate: "迁移", rollback: "回滚", clear: "删除",
      pull: "拉取", edit: "编辑", "up-to-date": "已是最新", "fast-forward": "快进",
      merged: "已合并", "merged-with-conflicts": "已合并（有冲突）", pushed: "已推送",
    },
  };

  const PROBLEMS = {
    en: {
      "interrupted-run": {
        title: "Run {id} ({operation}) was interrupted: its process stopped before the run finished.",
        what: "Make sure no dsh-memory process is still running, then run `dsh-memory recover --root {root} --confirmation RECOVER_MEMORY`: it keeps the run's commits or undoes them, rewrites memory files to match, journals what it did and releases the lock (your own uncommitted edits are kept). Until then, memory accepts no new change.",
      },
      "dirty-payload": {
        title: "Memory files have changes that are not committed to the memory's Git history.",
        what: "Review them with `git status` in {root}; keep them as a memory run with `dsh-memory adopt --root {root}`, or restore them with `git restore`. Delete memory keeps them in its recovery commit first.",
      },
      "journal-unreadable": {
        title: "The run journal cannot be read, so past runs cannot be listed or rolled back.",
        what: "Restore the journal from the memory's Git history: `git checkout HEAD -- .sync/runs .sync/last-run.json` in {root}.",
      },
      "git-unavailable": {
        title: "Git cannot be run.",
        what: "Install Git and make sure `git` is on the PATH of the process running `dsh-memory ui`.",
      },
      unreachable: {
        title: "The memory repository cannot be checked.",
        what: "Run `dsh-memory init` (or `dsh-memory health` for details) and refresh this page.",
      },
    },
    zh: {
      "interrupted-run": {
        title: "运行 {id}（{operation}）被中断：它的进程在运行结束前就停止了。",
        what: "确认没有 dsh-memory 进程仍在运行，然后执行 `dsh-memory recover --root {root} --confirmation RECOVER_MEMORY`：它会保留或撤销此次运行的提交，使记忆文件与之一致，记录所做的处理并释放锁（你自己未提交的修改会保留）。在此之前，记忆不接受新的修改。",
      },
      "dirty-payload": {
        title: "记忆文件有尚未提交到记忆库 Git 历史的修改。",
        what: "在 {root} 中用 `git status` 查看；用 `dsh-memory adopt --root {root}` 把它们作为一次记忆运行保存，或用 `git restore` 还原。删除记忆时会先把它们保存在恢复提交中。",
      },
      "journal-unreadable": {
        title: "无法读取运行日志，因此无法列出或回滚过去的运行。",
        what: "从记忆库的 Git 历史恢复日志：在 {root} 中运行 `git checkout HEAD -- .sync/runs .sync/last-run.json`。",
      },
      "git-unavailable": {
        title: "无法运行 Git。",
        what: "请安装 Git，并确保运行 `dsh-memory ui` 的进程的 PATH 中有 `git`。",
      },
      unreachable: {
        title: "无法检查记忆库。",
        what: "运行 `dsh-memory init`（或用 `dsh-memory health` 查看详情），然后刷新此页面。",
      },
    },
  };

  // -- state ---------------------------------------------------------------------------

  const state = {
    lang: pickLanguage(),
    token: readToken(),
    loaded: false,
    settings: null, // envelope
    status: null,
    health: null,
    runs: null,
    previews: null,
    saving: false,
    migration: null, // {paths: [...]} once the dry run answered
    confirm: null, // {kind: "rollback"|"apply"|"discard", id}
    del: { stage: "idle", deadline: 0, typed: "" },
    notices: {}, // section -> {kind, text}
    busy: false,
  };
  let deleteTimer = null;

  function pickLanguage() {
    let saved = null;
    try {
      saved = window.localStorage.getItem("dsh-memory-lang");
    } catch (e) {
      saved = null;
    }
    if (saved === "en" || saved === "zh") return saved;
    const wanted = (navigator.language || "en").toLowerCase();
    return wanted.startsWith("zh") ? "zh" : "en";
  }

  // The token arrives in the URL fragment (never sent to any server); it is kept for this
  // tab only and removed from the address bar so it does not linger in history or a screenshot.
  function readToken() {
    const match = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(window.location.hash);
    if (match) {
      try {
        window.sessionStorage.setItem("dsh-memory-token", match[1]);
      } catch (e) {
        /* private mode: keep it in memory only */
      }
      window.history.replaceState(null, "", window.location.pathname);
      return match[1];
    }
    try {
      return window.sessionStorage.getItem("dsh-memory-token");
    } catch (e) {
      return null;
    }
  }

  function t(key, vars) {
    const table = TEXT[state.lang];
    let text = key in table ? table[key] : TEXT.en[key];
    if (vars) {
      for (const [name, value] of Object.entries(vars)) text = text.split(`{${name}}`).join(String(value));
    }
    return text;
  }

  function word(value) {
    const table = WORDS[state.lang];
    return value in table ? table[value] : String(value);
  }

  function codeSentence(code) {
    const table = CODES[state.lang];
    if (code in table) return table[code];
    if (typeof code === "string" && code.startsWith("migration-")) return table["migration-failed"];
    return t("unknownCode");
  }

  function shortCommit(commit) {
    return typeof commit === "string" ? commit.slice(0, 12) : "—";
  }

  function when(iso) {
    if (!iso) return "—";
    const moment = new Date(iso);
    if (Number.isNaN(moment.getTime())) return String(iso);
    return moment.toLocaleString(state.lang === "zh" ? "zh-CN" : "en-GB", {
      dateStyle: "medium",
      timeStyle: "short",
    });
  }

  // -- the API -------------------------------------------------------------------------

  async function api(method, params) {
    if (!state.token) return { ok: false, error: { code: "ui-forbidden-token" } };
    try {
      const response = await fetch(`/api/memory/${method}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-DSH-Token": state.token },
        body: JSON.stringify(params || {}),
        cache: "no-store",
      });
      const body = await response.json();
      if (body && typeof body === "object" && "ok" in body) return body;
      return { ok: false, error: { code: "ui-invalid-request" } };
    } catch (e) {
      return { ok: false, error: { code: "network-error" } };
    }
  }

  async function refresh() {
    const [settings, status, health, runs, previews] = await Promise.all([
      api("getSettings"),
      api("status"),
      api("health"),
      api("runs", { limit: RUN_HISTORY_LIMIT }),
      api("previews"),
    ]);
    Object.assign(state, { settings, status, health, runs, previews, loaded: true });
    render();
  }

  function notify(section, ok, text) {
    state.notices[section] = { kind: ok ? "ok" : "error", text };
  }

  function failure(envelope) {
    const code = envelope.error && envelope.error.code;
    return `${codeSentence(code)} (${code})`;
  }

  // -- DOM helpers ---------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "onclick") node.addEventListener("click", value);
      else if (name === "oninput") node.addEventListener("input", value);
      else if (name === "onchange") node.addEventListener("change", value);
      else if (name === "className") node.className = value;
      else if (value === true) node.setAttribute(name, "");
      else node.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // `command` in a sentence becomes a <code> element (still text nodes only: no markup parsing).
  function withCode(text) {
    return String(text)
      .split("`")
      .map((part, index) => (index % 2 === 1 ? h("code", {}, part) : part));
  }

  function codeTag(code) {
    return h("span", { className: "code-tag mono" }, `(${code})`);
  }

  function badge(status) {
    const tone = { applied: "ok", rolled_back: "ok", no_change: "", failed: "bad", interrupted: "bad" };
    return h("span", { className: `badge ${tone[status] || "warn"}` }, word(status), " ", codeTag(status));
  }

  function noticeNode(section) {
    const notice = state.notices[section];
    if (!notice) return null;
    return h("p", { className: `notice ${notice.kind}`, "data-notice": section }, withCode(notice.text));
  }

  function fill(id, ...children) {
    const section = document.getElementById(id);
    section.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  }

  function errorBlock(envelope) {
    return h("p", { className: "notice error" }, withCode(failure(envelope)));
  }

  // -- sections ------------------------------------------------------------------------

  function renderSwitch() {
    const settings = state.settings;
    if (!settings.ok) {
      fill("sec-switch", h("h2", {}, t("switchTitle")), errorBlock(settings));
      return;
    }
    const enabled = settings.value.enabled;
    const box = h("input", {
      type: "checkbox",
      id: "memory-enabled",
      checked: enabled,
      disabled: state.saving || state.busy,
      onchange: (event) => setEnabled(event.target.checked),
    });
    fill(
      "sec-switch",
      h("h2", {}, t("switchTitle")),
      h(
        "label",
        { className: "switch-row", for: "memory-enabled" },
        box,
        t("switchLabel"),
        state.saving ? h("span", { id: "saving-indicator", className: "saving" }, t("saving")) : null,
      ),
      h("p", { id: "prompt-state", className: "hint", "data-enabled": String(enabled) }, enabled ? t("promptOn") : t("promptOff")),
      noticeNode("switch"),
    );
  }

  function renderRepo() {
    const status = state.status;
    const title = h("h2", {}, t("repoTitle"));
    if (!status.ok) {
      fill("sec-repo", title, errorBlock(status));
      return;
    }
    const v = status.value;
    const yesNo = (flag) => (flag ? t("yes") : t("no"));
    const root = state.health && state.health.ok ? state.health.value.memoryRoot : null;
    const facts = h(
      "dl",
      { className: "facts", id: "repo-facts" },
      root ? [h("dt", {}, t("root")), h("dd", { className: "mono" }, root)] : null,
      h("dt", {}, t("dataFiles")),
      h("dd", { id: "data-file-count" }, v.dataFileCount),
      h("dt", {}, t("emptyLabel")),
      h("dd", { id: "repo-empty" }, yesNo(v.empty)),
      h("dt", {}, t("dirtyLabel")),
      h("dd", { id: "repo-dirty" }, yesNo(v.targetDirty)),
      h("dt", {}, t("schemaLabel")),
      h("dd", {}, v.schemaVersion),
      h("dt", {}, t("legacyLabel")),
      h("dd", { id: "legacy-count" }, v.legacyFileCount),
    );
    let migration = null;
    if (state.migration) {
      const paths = state.migration.paths;
      migration = h(
        "div",
        { className: "confirm-box", id: "migration-plan" },
        h("p", {}, t("migratePlanTitle")),
        h("ul", { className: "paths mono" }, paths.map((p) => h("li", {}, p))),
        h(
          "div",
          { className: "actions" },
          h("button", { type: "button", id: "migrate-confirm", disabled: state.busy, onclick: migrateApply }, t("migrateConfirm", { n: paths.length })),
          h("button", { type: "button", id: "migrate-cancel", className: "secondary", onclick: () => { state.migration = null; render(); } }, t("cancel")),
        ),
      );
    } else if (v.pendingMigration) {
      migration = h(
        "div",
        { className: "actions" },
        h("button", { type: "button", id: "migrate-button", disabled: state.busy, onclick: migratePlan }, t("migrateButton", { n: v.legacyFileCount })),
      );
    }
    fill("sec-repo", title, facts, migration, noticeNode("repo"));
  }

  function exchangeLine(last, id) {
    if (!last) return h("dd", { id }, t("remoteNever"));
    const failed = last.status === "failed";
    const parts = [when(last.at), " · "];
    if (failed) parts.push(h("span", { className: "badge bad" }, word("failed"), " ", codeTag(last.code)), " ", codeSentence(last.code));
    else parts.push(h("span", { className: "badge ok" }, word(last.status), " ", codeTag(last.status)));
    if (!failed && last.conflicts) parts.push(" · ", t("remoteConflicts", { n: last.conflicts }));
    return h("dd", { id, "data-status": last.status }, parts);
  }

  function renderRemote() {
    const title = h("h2", {}, t("remoteTitle"));
    const status = state.status;
    if (!status.ok) {
      fill("sec-remote", title, errorBlock(status));
      return;
    }
    const remote = status.value.remote;
    if (!remote) {
      fill("sec-remote", title, h("p", { className: "hint", id: "remote-none" }, withCode(t("remoteNone"))));
      return;
    }
    const counts =
      remote.ahead === null || remote.behind === null
        ? t("remoteNotFetched")
        : t("remoteCounts", { ahead: remote.ahead, behind: remote.behind });
    const facts = h(
      "dl",
      { className: "facts", id: "remote-facts" },
      h("dt", {}, t("remoteUrl")),
      h("dd", { className: "mono", id: "remote-url" }, remote.url),
      h("dt", {}, t("remoteBranch")),
      h("dd", { className: "mono", id: "remote-branch" }, remote.branch || "—"),
      h("dt", {}, t("remoteSync")),
      h("dd", { id: "remote-counts" }, counts, remote.lastFetchAt ? ` (${when(remote.lastFetchAt)})` : ""),
      h("dt", {}, t("remoteLastPull")),
      exchangeLine(remote.lastPull, "remote-last-pull"),
      h("dt", {}, t("remoteLastPush")),
      exchangeLine(remote.lastPush, "remote-last-push"),
    );
    const invalid = remote.valid ? null : h("p", { className: "notice error", id: "remote-invalid" }, withCode(t("remoteInvalid")));
    fill("sec-remote", title, invalid, facts, h("p", { className: "hint" }, withCode(t("remoteHow"))));
  }

  function confirmBox(kind, id, explain, yesLabel, onYes) {
    return h(
      "div",
      { className: "confirm-box", "data-confirm": kind },
      h("p", {}, explain),
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", className: "confirm-yes", disabled: state.busy, onclick: onYes }, yesLabel),
        h("button", { type: "button", className: "confirm-no secondary", onclick: () => { state.confirm = null; render(); } }, t("cancel")),
      ),
    );
  }

  function runItem(run) {
    const id = run.run_id;
    const changed = Array.isArray(run.changed_paths) ? run.changed_paths : [];
    const count = typeof run.changed_path_count === "number" ? run.changed_path_count : changed.length;
    const asking = state.confirm && state.confirm.kind === "rollback" && state.confirm.id === id;
    return h(
      "li",
      { className: "run", "data-run-id": id, "data-status": run.status },
      h("div", {}, h("strong", {}, word(run.operation)), " · ", badge(run.status), " · ", when(run.started_at)),
      h(
        "div",
        { className: "hint" },
        h("span", { className: "mono" }, id),
        " · ",
        t("changedFiles", { n: count }),
        run.apply_commit ? [" · ", t("applyCommit"), " ", h("span", { className: "mono" }, shortCommit(run.apply_commit))] : null,
        run.error_code ? [" · ", codeSentence(run.error_code), " ", codeTag(run.error_code)] : null,
      ),
      changed.length ? h("ul", { className: "paths mono" }, changed.slice(0, 10).map((p) => h("li", {}, p))) : null,
      run.status === "applied" && !asking
        ? h("div", { className: "actions" }, h("button", { type: "button", className: "rollback secondary", "data-run-id": id, disabled: state.busy, onclick: () => { state.confirm = { kind: "rollback", id }; render(); } }, t("rollbackButton")))
        : null,
      asking ? confirmBox("rollback", id, t("rollbackExplain", { id }), t("rollbackConfirm"), () => rollback(id)) : null,
    );
  }

  function renderRuns() {
    const title = h("h2", {}, t("runsTitle"));
    const status = state.status;
    let last = null;
    if (status.ok) {
      const run = status.value.lastRun;
      last = run
        ? h(
            "p",
            { id: "last-run" },
            h("strong", {}, t("lastRun"), ": "),
            badge(run.status),
            " · ",
            t("changedFiles", { n: run.changedFileCount }),
            run.applyCommit ? [" · ", t("applyCommit"), " ", h("span", { className: "mono" }, shortCommit(run.applyCommit))] : null,
          )
        : h("p", { id: "last-run", className: "hint" }, t("noRuns"));
    }
    let history;
    if (!state.runs.ok) history = errorBlock(state.runs);
    else if (state.runs.value.runs.length === 0) history = null;
    else history = [h("h3", { className: "hint" }, t("history")), h("ul", { className: "plain", id: "run-history" }, state.runs.value.runs.map(runItem))];
    fill("sec-runs", title, last, history, noticeNode("runs"));
  }

  function previewItem(preview) {
    const id = preview.preview_id;
    const asking = state.confirm && (state.confirm.kind === "apply" || state.confirm.kind === "discard") && state.confirm.id === id;
    const paths = Array.isArray(preview.changed_paths) ? preview.changed_paths : [];
    let box = null;
    if (asking && state.confirm.kind === "apply") box = confirmBox("apply", id, t("applyExplain", { id }), t("applyConfirm"), () => applyPreview(id));
    if (asking && state.confirm.kind === "discard") box = confirmBox("discard", id, t("discardExplain", { id }), t("discardConfirm"), () => discardPreview(id));
    return h(
      "li",
      { className: "preview", "data-preview-id": id },
      h("div", {}, h("span", { className: "mono" }, id), " · ", t("previewCreated", { when: when(preview.created_at) }), " · ", h("span", { className: "expires", "data-expires-at": preview.expires_at || "" }, t("previewExpires", { when: when(preview.expires_at) }))),
      h("div", { className: "hint" }, t("changedFiles", { n: paths.length }), " · ", t("previewSessions", { n: typeof preview.candidate_sessions === "number" ? preview.candidate_sessions : 0 })),
      paths.length ? h("ul", { className: "paths mono" }, paths.map((p) => h("li", {}, p))) : null,
      asking
        ? box
        : h(
            "div",
            { className: "actions" },
            h("button", { type: "button", className: "apply-preview", disabled: state.busy, onclick: () => { state.confirm = { kind: "apply", id }; render(); } }, t("applyPreview")),
            h("button", { type: "button", className: "discard-preview secondary", disabled: state.busy, onclick: () => { state.confirm = { kind: "discard", id }; render(); } }, t("discardPreview")),
          ),
    );
  }

  function renderPreviews() {
    const title = h("h2", {}, t("previewsTitle"));
    const previews = state.previews;
    let body;
    if (!previews.ok) {
      body = errorBlock(previews);
    } else if (previews.value.previews.length === 0) {
      body = h("p", { className: "hint", id: "no-previews" }, t("noPreviews"));
    } else {
      body = h("ul", { className: "plain", id: "preview-list" }, previews.value.previews.map(previewItem));
    }
    fill("sec-previews", title, body, noticeNode("previews"));
  }

  function problemNode(kind, vars) {
    const text = PROBLEMS[state.lang][kind];
    const fillIn = (s) => Object.entries(vars).reduce((acc, [k, v]) => acc.split(`{${k}}`).join(String(v)), s);
    return h(
      "li",
      { className: "problem", "data-problem": kind },
      h("div", { className: "problem-title" }, withCode(fillIn(text.title))),
      h("p", { className: "problem-what" }, h("strong", {}, t("whatToDo")), withCode(fillIn(text.what))),
    );
  }

  function renderHealth() {
    const title = h("h2", {}, t("healthTitle"));
    const health = state.health;
    if (!health.ok) {
      fill("sec-health", title, h("ul", { className: "plain", id: "health-problems" }, problemNode("unreachable", {})), errorBlock(health));
      return;
    }
    const v = health.value;
    const root = v.memoryRoot;
    const problems = [];
    const active = v.activeRun;
    const interrupted = active && active.state === "interrupted" ? active : v.interruptedRun;
    if (interrupted) {
      problems.push(problemNode("interrupted-run", { id: interrupted.run_id || "?", operation: word(interrupted.operation || "?"), root }));
    }
    if (v.payloadDirty) problems.push(problemNode("dirty-payload", { root }));
    if (!v.journalReadable) problems.push(problemNode("journal-unreadable", { root }));
    if (!v.gitAvailable) problems.push(problemNode("git-unavailable", { root }));
    const busy =
      active && active.state === "running"
        ? h("p", { className: "notice info", id: "health-busy" }, t("busy", { operation: word(active.operation), when: when(active.started_at) }))
        : null;
    const body = problems.length
      ? h("ul", { className: "plain", id: "health-problems" }, problems)
      : h("p", { className: "hint", id: "health-ok" }, t("healthy"));
    fill("sec-health", title, busy, body);
  }

  function renderDelete() {
    const title = h("h2", {}, t("deleteTitle"));
    const del = state.del;
    let body;
    if (del.stage === "idle") {
      body = [
        h("p", { className: "hint" }, t("deleteIntro")),
        h("div", { className: "actions" }, h("button", { type: "button", id: "delete-start", className: "danger", disabled: state.busy, onclick: deleteExplain }, t("deleteStart"))),
      ];
    } else if (del.stage === "explain") {
      body = h(
        "div",
        { className: "confirm-box", id: "delete-explain" },
        h("p", {}, t("deleteExplain")),
        h(
          "div",
          { className: "actions" },
          h("button", { type: "button", id: "delete-continue", className: "danger", onclick: deleteAskWord }, t("deleteContinue")),
          h("button", { type: "button", id: "delete-cancel", className: "secondary", onclick: () => deleteCancel(false) }, t("cancel")),
        ),
      );
    } else {
      const left = Math.max(0, Math.ceil((del.deadline - Date.now()) / 1000));
      const matches = del.typed.trim().toLowerCase() === t("deleteWord").toLowerCase();
      const input = h("input", {
        type: "text",
        id: "delete-word",
        autocomplete: "off",
        spellcheck: "false",
        "aria-label": t("deleteTypePrompt", { word: t("deleteWord") }),
        oninput: (event) => {
          state.del.typed = event.target.value;
          const button = document.getElementById("delete-confirm");
          button.disabled = state.del.typed.trim().toLowerCase() !== t("deleteWord").toLowerCase() || state.busy;
        },
      });
      input.value = del.typed;
      body = h(
        "div",
        { className: "confirm-box", id: "delete-type" },
        h("p", {}, t("deleteTypePrompt", { word: t("deleteWord") })),
        input,
        h("p", { className: "hint", id: "delete-countdown" }, t("deleteCountdown", { n: left })),
        h(
          "div",
          { className: "actions" },
          h("button", { type: "button", id: "delete-confirm", className: "danger", disabled: !matches || state.busy, onclick: deleteNow }, t("deleteNow")),
          h("button", { type: "button", id: "delete-cancel", className: "secondary", onclick: () => deleteCancel(false) }, t("cancel")),
        ),
      );
    }
    fill("sec-delete", title, body, noticeNode("delete"));
  }

  function render() {
    document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
    document.title = `dsh · ${t("title")}`;
    document.getElementById("title").textContent = t("title");
    document.getElementById("refresh").textContent = t("refresh");
    document.getElementById("lang-switch").textContent = t("langSwitch");
    document.getElementById("lang-switch").setAttribute("lang", state.lang === "zh" ? "en" : "zh");
    const missing = document.getElementById("token-missing");
    missing.textContent = t("tokenMissing");
    missing.hidden = Boolean(state.token);
    if (!state.loaded) return;
    // Re-rendering must not steal the focus from the confirmation word while typing.
    const typing = document.activeElement && document.activeElement.id === "delete-word";
    renderSwitch();
    renderRepo();
    renderRemote();
    renderRuns();
    renderPreviews();
    renderHealth();
    renderDelete();
    if (typing) {
      const input = document.getElementById("delete-word");
      if (input) input.focus();
    }
    // Nothing visible: tells tests (and anything automating the page) that it has settled.
    document.body.dataset.busy = String(state.busy || state.saving);
    document.body.dataset.ready = "true";
  }

  // -- actions -------------------------------------------------------------------------

  async function busyDo(action) {
    state.busy = true;
    render();
    try {
      await action();
    } finally {
      state.busy = false;
      state.confirm = null;
      await refresh();
    }
  }

  async function setEnabled(enabled) {
    state.saving = true;
    delete state.notices.switch;
    render();
    const result = await api("setEnabled", { enabled });
    state.saving = false;
    notify("switch", result.ok, result.ok ? t("saved") : failure(result));
    await refresh();
  }

  async function migratePlan() {
    await busyDo(async () => {
      delete state.notices.repo;
      const plan = await api("migrateLegacy", { dryRun: true });
      if (!plan.ok) notify("repo", false, failure(plan));
      else if (plan.value.changedPaths.length === 0) notify("repo", true, t("migrateNothing"));
      else state.migration = { paths: plan.value.changedPaths };
    });
  }

  async function migrateApply() {
    await busyDo(async () => {
      const result = await api("migrateLegacy", { dryRun: false });
      state.migration = null;
      if (!result.ok) notify("repo", false, failure(result));
      else notify("repo", true, t("migrateDone", { n: result.value.migratedCount, commit: shortCommit(result.value.applyCommit) }));
    });
  }

  async function rollback(runId) {
    await busyDo(async () => {
      const result = await api("rollback", { runId, confirmation: "ROLLBACK_MEMORY" });
      if (!result.ok) notify("runs", false, failure(result));
      else notify("runs", true, t("rollbackDone", { id: runId, commit: shortCommit(result.value.rollbackCommit) }));
    });
  }

  async function applyPreview(previewId) {
    await busyDo(async () => {
      const result = await api("applyPreview", { previewId });
      if (!result.ok) notify("previews", false, failure(result));
      else notify("previews", true, t("applyDone", { id: previewId, commit: shortCommit(result.value.apply_commit || result.value.applyCommit) }));
    });
  }

  async function discardPreview(previewId) {
    await busyDo(async () => {
      const result = await api("discardPreview", { previewId });
      if (!result.ok) notify("previews", false, failure(result));
      else notify("previews", true, t("discardDone", { id: previewId }));
    });
  }

  function stopDeleteTimer() {
    if (deleteTimer !== null) {
      window.clearInterval(deleteTimer);
      deleteTimer = null;
    }
  }

  function deleteExplain() {
    delete state.notices.delete;
    state.del = { stage: "explain", deadline: 0, typed: "" };
    render();
  }

  function deleteAskWord() {
    state.del = { stage: "type", deadline: Date.now() + DELETE_TIMEOUT_SECONDS * 1000, typed: "" };
    stopDeleteTimer();
    deleteTimer = window.setInterval(() => {
      if (state.del.stage !== "type") return stopDeleteTimer();
      if (Date.now() >= state.del.deadline) return deleteCancel(true);
      const countdown = document.getElementById("delete-countdown");
      const left = Math.max(0, Math.ceil((state.del.deadline - Date.now()) / 1000));
      if (countdown) countdown.textContent = t("deleteCountdown", { n: left });
      return undefined;
    }, 250);
    render();
    const input = document.getElementById("delete-word");
    if (input) input.focus();
  }

  function deleteCancel(timedOut) {
    stopDeleteTimer();
    state.del = { stage: "idle", deadline: 0, typed: "" };
    notify("delete", false, timedOut ? t("deleteTimedOut") : t("deleteCancelled"));
    state.notices.delete.kind = "info";
    render();
  }

  async function deleteNow() {
    // Checked again here: the word must match and the time must not have run out.
    if (state.del.stage !== "type" || Date.now() >= state.del.deadline) return deleteCancel(true);
    if (state.del.typed.trim().toLowerCase() !== t("deleteWord").toLowerCase()) return undefined;
    stopDeleteTimer();
    state.del = { stage: "idle", deadline: 0, typed: "" };
    return busyDo(async () => {
      const result = await api("clear", { confirmation: "DELETE_MEMORY" });
      if (!result.ok) notify("delete", false, failure(result));
      else if (result.value.alreadyEmpty) notify("delete", true, t("deleteAlreadyEmpty"));
      else
        notify("delete", true, t("deleteDone", {
          n: result.value.clearedFileCount,
          recovery: shortCommit(result.value.recoveryCommit),
          clear: shortCommit(result.value.clearCommit),
        }));
    });
  }

  // -- start ---------------------------------------------------------------------------

  document.getElementById("lang-switch").addEventListener("click", () => {
    state.lang = state.lang === "zh" ? "en" : "zh";
    try {
      window.localStorage.setItem("dsh-memory-lang", state.lang);
    } catch (e) {
      /* not persisted: fine */
    }
    render();
  });
  document.getElementById("refresh").addEventListener("click", () => refresh());
  render();
  if (state.token) refresh();
})();
