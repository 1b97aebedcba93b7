#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The settings app used the way a person uses it, through the accessibility
tree (AT-SPI): under Xvfb, against private session buses where D-Bus
activation starts the built useractivityd and useractivity-handoffd.

Usage: settings_ui_test.py [--screenshots DIR] [--only NAME[,NAME]]
Prints one line per check and "N passed, M failed"; exits non-zero on a failure."""
import argparse
import os
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from desktop_session import BUILD, Session, accessible_application, wait_until  # noqa: E402

EDITOR = "com.example.Editor"
NOTES = "com.example.Notes"
APPS = [(EDITOR, [f"{EDITOR}.edit"]), (NOTES, [f"{NOTES}.note"])]
MANAGER = ("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity")
HANDOFF = ("org.example.UserActivity.Handoff", "/org/example/UserActivity/Handoff", "org.example.UserActivity.Handoff")

parser = argparse.ArgumentParser()
parser.add_argument("--screenshots", help="directory for a PNG of each page")
parser.add_argument("--only", help="comma-separated check names")
options = parser.parse_args()

session = Session("a", apps=APPS)
# pyatspi finds the accessibility bus through the session bus it starts with.
os.environ["DBUS_SESSION_BUS_ADDRESS"] = session.address
os.environ["DISPLAY"] = session.display
import pyatspi  # noqa: E402

app_process = None
frame = None


def find(root, role, name=None, contains=None, showing=True):
    """The first node under `root` with this role whose name equals `name`
    (or contains `contains`), searched breadth first; None when absent."""
    queue = [root]
    while queue:
        node = queue.pop(0)
        try:
            node_role = node.getRoleName()
            node_name = node.name or ""
            children = [node.getChildAtIndex(i) for i in range(node.childCount)]
            visible = node.getState().contains(pyatspi.STATE_VISIBLE)
        except Exception:
            continue
        if node_role == role and (name is None or node_name == name) and (contains is None or contains in node_name) \
                and (visible or not showing):
            return node
        queue.extend(child for child in children if child is not None)
    return None


def find_all(root, role, contains=""):
    found, queue = [], [root]
    while queue:
        node = queue.pop(0)
        try:
            if node.getRoleName() == role and contains in (node.name or "") \
                    and node.getState().contains(pyatspi.STATE_VISIBLE):
                found.append(node)
            queue.extend(node.getChildAtIndex(i) for i in range(node.childCount))
        except Exception:
            continue
    return [node for node in found if node is not None]


def label_texts(root):
    """The text of every label under `root` (labels that vanish meanwhile are skipped)."""
    texts = []
    for label in find_all(root, "label"):
        try:
            texts.append(label.name or "")
        except Exception:
            continue
    return texts


def require(root, role, name=None, contains=None, timeout=20):
    node = wait_until(lambda: find(root, role, name, contains), timeout, 0.2)
    if node is None:
        raise AssertionError(f"no {role} named {name or contains!r} on screen")
    return node


def shown_text(name):
    """An accessible name as a person reads it: GTK 4.8 names a mnemonic
    button "_Forget Forget" (its label, then its text)."""
    plain = (name or "").replace("_", "")
    half = len(plain) // 2
    return plain[:half] if plain[half:half + 1] == " " and plain[:half] == plain[half + 1:] else plain


def dialog_button(label, timeout=10):
    """The button `label` of a dialog (a window of the app other than the main one)."""
    def lookup():
        for index in range(app_root.childCount):
            window = app_root.getChildAtIndex(index)
            if window is None or window == frame:
                continue
            for button in find_all(window, "push button"):
                if shown_text(button.name) == label:
                    return button
    button = wait_until(lookup, timeout, 0.1)
    if button is None:
        raise AssertionError(f"no dialog with a {label!r} button")
    return button


def press(node):
    action = node.queryAction()
    for index in range(action.nActions):
        if action.getName(index) in ("click", "activate", "press", "toggle"):
            action.doAction(index)
            return
    action.doAction(0)


def checked(node):
    return node.getState().contains(pyatspi.STATE_CHECKED)


TAB = 0xff09


def focus_with_tab(node, presses=80):
    """Moves the keyboard focus to `node` with the Tab key only (GTK 4.8
    does not implement AT-SPI's grabFocus): every control must be reachable."""
    def focused(candidate, depth=0):
        if candidate.getState().contains(pyatspi.STATE_FOCUSED):
            return True
        return depth < 8 and any(focused(candidate.getChildAtIndex(i), depth + 1) for i in range(candidate.childCount))
    for _ in range(presses):
        if focused(node):
            return
        press_key(TAB)
        wait_until(lambda: False, 0.05)
    raise AssertionError(f"{node.getRoleName()} {node.name!r} not reached with Tab in {presses} presses")


def type_text(node, text):
    """Focuses `node` and types `text` key by key (XTest), as a person does."""
    focus_with_tab(node)
    for character in text:
        pyatspi.Registry.generateKeyboardEvent(ord(character), None, pyatspi.KEY_SYM)
        time.sleep(0.03)


def press_key(keysym):
    pyatspi.Registry.generateKeyboardEvent(keysym, None, pyatspi.KEY_SYM)


RETURN = 0xff0d


def show_page(title):
    tab = require(frame, "page tab", title)
    if not tab.getState().contains(pyatspi.STATE_SELECTED):
        press(tab)
    assert wait_until(lambda: tab.getState().contains(pyatspi.STATE_SELECTED), 10, 0.05), f"page {title} not shown"


def close_toasts():
    """Closes the toasts shown with their close buttons, as a person does (a
    toast's time runs only while its window is active, and without a window
    manager it never is), and waits until they are gone from the screen."""
    toast = lambda: find(frame, "filler", "AdwToastWidget")
    for _ in range(10):
        shown = toast()
        if shown is None:
            return
        button = find(shown, "push button")
        if button is not None:
            press(button)
        wait_until(lambda: toast() is not shown, 5)
    assert toast() is None, "a toast stays"


def prop(target, name):
    return session.get(target[0], target[1], target[2], name)


def screenshot(name):
    if not options.screenshots:
        return
    close_toasts()
    import gi
    gi.require_version("Gdk", "3.0")
    from gi.repository import Gdk
    Gdk.init([])
    x, y, width, height = frame.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    root = Gdk.get_default_root_window()
    pixbuf = Gdk.pixbuf_get_from_window(root, max(0, x), max(0, y), width, height)
    os.makedirs(options.screenshots, exist_ok=True)
    pixbuf.savev(os.path.join(options.screenshots, f"settings-{name}.png"), "png", [], [])


# ---- checks ----

def handoff_switch_sets_enabled():
    show_page("Handoff")
    toggle = require(frame, "check box", contains="Handoff")
    assert not checked(toggle), "Handoff starts switched off"
    press(toggle)
    assert wait_until(lambda: prop(HANDOFF, "Enabled") == "(<true>,)", 30), "Enabled did not become true"


def device_name_reaches_service():
    show_page("Handoff")
    if prop(HANDOFF, "Enabled") != "(<true>,)":
        press(require(frame, "check box", "Handoff"))
    entry = require(frame, "text", "Device name")
    wait_until(lambda: entry.getState().contains(pyatspi.STATE_SENSITIVE), 10)
    entry.queryEditableText().setTextContents("")
    type_text(entry, "Study desk")
    press_key(RETURN)
    assert wait_until(lambda: prop(HANDOFF, "DeviceName") == "(<'Study desk'>,)", 20), prop(HANDOFF, "DeviceName")
    screenshot("handoff")


def discoverable_shows_time_left():
    show_page("Handoff")
    if prop(HANDOFF, "Enabled") != "(<true>,)":
        press(require(frame, "check box", "Handoff"))
    visible = require(frame, "check box", "Visible to nearby devices")
    wait_until(lambda: visible.getState().contains(pyatspi.STATE_SENSITIVE), 10)
    press(visible)
    assert wait_until(lambda: prop(HANDOFF, "Discoverable") == "(<true>,)", 20), "Discoverable did not become true"
    assert wait_until(lambda: any(text.startswith("Visible for ") and text.endswith(" more") for text in label_texts(frame)), 10), \
        "the time left is not shown"
    press(visible)
    assert wait_until(lambda: prop(HANDOFF, "Discoverable") == "(<false>,)", 20), "Discoverable did not turn off"


def block_an_app_from_the_installed_apps():
    show_page("Privacy")
    press(require(frame, "push button", contains="Block an App"))
    chooser = wait_until(lambda: [app_root.getChildAtIndex(i) for i in range(app_root.childCount)
                                  if app_root.getChildAtIndex(i) is not None and app_root.getChildAtIndex(i).name == "Block an App"], 10)
    assert chooser, "the app chooser did not open"
    row = require(chooser[0], "list item", contains="Notes")
    assert find(row, "image") is not None, "the app is shown with its icon"
    press(require(row, "push button", contains="Block"))
    assert wait_until(lambda: prop(MANAGER, "BlockedApplications") == f"(<['{NOTES}']>,)", 20), prop(MANAGER, "BlockedApplications")
    assert require(frame, "list item", contains="Notes"), "the blocked app is listed"
    session.ctl("unblock-app", NOTES)


def privacy_switches_set_properties():
    show_page("Privacy")
    paused = require(frame, "check box", contains="Pause history")
    wait_until(lambda: prop(MANAGER, "Paused") == "(<false>,)", 10)
    press(paused)
    assert wait_until(lambda: prop(MANAGER, "Paused") == "(<true>,)", 20), "Paused did not become true"
    bridge = require(frame, "check box", contains="recent files")
    assert wait_until(lambda: checked(bridge), 10), "the recent-files switch shows the default (on)"
    press(bridge)
    assert wait_until(lambda: prop(MANAGER, "Bridges") == "(<@as []>,)", 20), prop(MANAGER, "Bridges")
    days = require(frame, "spin button", contains="Keep history")
    days.queryValue().currentValue = 30.0
    assert wait_until(lambda: prop(MANAGER, "RetentionDays") == "(<uint32 30>,)", 20), prop(MANAGER, "RetentionDays")
    entry = require(frame, "text", "Block a type")
    type_text(entry, f"{NOTES}.note")
    press_key(RETURN)
    assert wait_until(lambda: prop(MANAGER, "BlockedActivityTypes") == f"(<['{NOTES}.note']>,)", 20), \
        prop(MANAGER, "BlockedActivityTypes")
    assert require(frame, "list item", f"{NOTES}.note"), "the blocked type is listed"
    screenshot("privacy")


def cli_change_shows_in_app():
    show_page("Privacy")
    paused = require(frame, "check box", contains="Pause history")
    session.ctl("pause")
    assert wait_until(lambda: checked(paused), 20), "useractivityctl pause did not show"
    session.ctl("resume")
    assert wait_until(lambda: not checked(paused), 20), "useractivityctl resume did not show"
    session.ctl("block-app", EDITOR)
    assert require(frame, "list item", contains="Editor"), "the app blocked with useractivityctl is listed"
    session.ctl("unblock-app", EDITOR)
    assert wait_until(lambda: find(frame, "list item", contains="Editor") is None, 20), "unblocking did not show"


ALT = 64  # the keycode of Alt_L in Xvfb's default (evdev) keymap; KEY_PRESS takes keycodes
ESCAPE = 0xff1b


def press_mnemonic(letter):
    pyatspi.Registry.generateKeyboardEvent(ALT, None, pyatspi.KEY_PRESS)
    pyatspi.Registry.generateKeyboardEvent(ord(letter), None, pyatspi.KEY_SYM)
    pyatspi.Registry.generateKeyboardEvent(ALT, None, pyatspi.KEY_RELEASE)


def mnemonic_toggles_pause():
    """Alt+A, the mnemonic of "P_ause history", reaches its switch from the keyboard."""
    show_page("Privacy")
    paused = require(frame, "check box", contains="Pause history")
    before = prop(MANAGER, "Paused")
    press_mnemonic("a")
    flipped = "(<false>,)" if before == "(<true>,)" else "(<true>,)"
    assert wait_until(lambda: prop(MANAGER, "Paused") == flipped, 20), f"Alt+A left Paused at {prop(MANAGER, 'Paused')}"
    assert wait_until(lambda: checked(paused) == (flipped == "(<true>,)"), 10), "the switch shows it"
    session.ctl("resume")


def donate(app, title, description, keyword=None):
    args = ["donate", "--app-id", app, "--title", title, "--description", description, "--search"]
    if keyword:
        args += ["--keyword", keyword]
    return session.ctl(*args, f"{app}.{'edit' if app == EDITOR else 'note'}")


def history_search_as_you_type():
    session.ctl("resume")
    session.call(MANAGER[0], MANAGER[1], "org.freedesktop.DBus.Properties.Set", MANAGER[2],
                 "BlockedActivityTypes", "<@as []>")
    donate(EDITOR, "Garden plan", "Vegetable beds for spring")
    donate(EDITOR, "Garage invoice", "Paid in March")
    donate(NOTES, "Gardening notes", "Tomatoes and beans")
    donate(NOTES, "Shopping list", "Milk, bread")
    show_page("History")
    search = require(frame, "entry", "Search history")
    type_text(search, "gard")
    titles = lambda: sorted(text for text in label_texts(frame) if text in (
        "Garden plan", "Garage invoice", "Gardening notes", "Shopping list"))
    assert wait_until(lambda: titles() == ["Garden plan", "Gardening notes"], 20), titles()
    screenshot("history")
    search.queryEditableText().setTextContents("")
    type_text(search, "ga")
    assert wait_until(lambda: titles() == ["Garage invoice", "Garden plan", "Gardening notes"], 20), titles()


def history_follows_changes_elsewhere():
    """With a search shown, a donation by a script and a forget with useractivityctl show without typing."""
    show_page("History")
    search = require(frame, "entry", "Search history")
    search.queryEditableText().setTextContents("")
    type_text(search, "gard")
    assert wait_until(lambda: "Garden plan" in label_texts(frame), 20), label_texts(frame)
    session.call(MANAGER[0], MANAGER[1], "org.example.UserActivity.Donate", f"{EDITOR}.edit",
                 f"{{'app-id': <'{EDITOR}'>, 'title': <'Garden shed'>, 'eligible-for-search': <true>, "
                 f"'persistent-identifier': <'shed'>}}")
    assert wait_until(lambda: "Garden shed" in label_texts(frame), 20), "the donation did not show"
    assert "Garden plan" in label_texts(frame), "the other results stay"
    session.ctl("delete", "--app-id", EDITOR, "shed")
    assert wait_until(lambda: "Garden shed" not in label_texts(frame), 20), "the forgotten entry is still shown"
    assert "Garden plan" in label_texts(frame), "the other results stay"


def forget_one_removes_it():
    show_page("History")
    search = require(frame, "entry", "Search history")
    search.queryEditableText().setTextContents("")
    type_text(search, "garage")
    press(require(frame, "push button", contains="Forget this activity: Garage invoice"))
    result = lambda: session.call(MANAGER[0], MANAGER[1], "org.example.UserActivity.Search", "ga", "{}")
    assert wait_until(lambda: "Garage invoice" not in result(), 20), result()
    assert "Garden plan" in result() and "Gardening notes" in result(), "only that entry is forgotten"
    assert wait_until(lambda: "Garage invoice" not in label_texts(frame), 20), "the forgotten entry is still shown"


def forget_this_app_removes_its_entries():
    show_page("History")
    search = require(frame, "entry", "Search history")
    search.queryEditableText().setTextContents("")
    type_text(search, "gard")
    forget = require(frame, "push button", contains="Forget this app: Notes")
    press(forget)
    press(dialog_button("Forget"))
    result = lambda: session.call(MANAGER[0], MANAGER[1], "org.example.UserActivity.Search", "gard", "{}")
    assert wait_until(lambda: "Gardening notes" not in result(), 20), result()
    assert "Garden plan" in result(), "other apps' entries stay"
    assert wait_until(lambda: find(frame, "label", "Gardening notes") is None, 20), "the forgotten entry is still shown"


def forget_everything_with_confirmation():
    show_page("History")
    row_button = require(frame, "push button", contains="Forget everything")
    press(row_button)
    press(dialog_button("Forget"))
    result = lambda: session.call(MANAGER[0], MANAGER[1], "org.example.UserActivity.Search", "g", "{}")
    assert wait_until(lambda: result() == "(@aa{sv} [],)", 20), result()


def unavailable_service_is_reported():
    # A service that cannot be started is reported on its page, not waited for.
    os.rename(os.path.join(session.root, "services", "org.example.UserActivity.Handoff.service"),
              os.path.join(session.root, "handoff.service.off"))
    try:
        session.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig")
        handoffd = session.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                                HANDOFF[0])
        os.kill(int(handoffd.strip("(),").split()[-1]), 15)
        show_page("Handoff")
        retry = require(frame, "push button", contains="Try Again", timeout=20)
        press(retry)
        require(frame, "label", contains="Handoff is not available", timeout=20)
    finally:
        os.rename(os.path.join(session.root, "handoff.service.off"),
                  os.path.join(session.root, "services", "org.example.UserActivity.Handoff.service"))
        session.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig")
    press(require(frame, "push button", contains="Try Again"))
    assert wait_until(lambda: find(frame, "label", contains="Handoff is not available") is None, 30), "the page came back"


# What a person operates: buttons, switches, entries, spin buttons, page tabs.
CONTROL_ROLES = {"push button", "toggle button", "check box", "switch", "text", "entry", "password text",
                 "spin button", "combo box", "radio button", "link", "slider", "page tab", "menu item"}


def controls_shown(root):
    """Every control under `root` that a person can see and use now (visible,
    sensitive), with a description; hidden pages and rows are skipped."""
    found, queue = [], [root]
    while queue:
        node = queue.pop(0)
        try:
            states = node.getState()
            # GTK 4.8 sets VISIBLE only on widgets drawn (never SHOWING).
            if not states.contains(pyatspi.STATE_VISIBLE):
                continue
            # Nor does it clear SENSITIVE under an insensitive row: what is
            # under one cannot be used.
            if not states.contains(pyatspi.STATE_SENSITIVE):
                continue
            role = node.getRoleName()
            if role in CONTROL_ROLES:
                found.append((node, f"{role} {shown_text(node.name)!r}"))
            queue.extend(node.getChildAtIndex(i) for i in range(node.childCount))
        except Exception:
            continue
    return [(node, text) for node, text in found if node is not None]


focus_events = []
focus_events_followed = []


def pump_events():
    """Delivers the accessibility events received so far (no main loop runs here)."""
    from gi.repository import GLib
    context = GLib.MainContext.default()
    while context.pending():
        context.iteration(False)


def page_content(marker_role, marker_name):
    """The page holding the control `marker_name` (GTK 4.8 marks the pages
    not shown VISIBLE too): the parent of the page's scrolled window, the
    first one above a control outside the history's list."""
    node = require(frame, marker_role, marker_name)
    while node is not None and node.getRoleName() != "scroll pane":
        node = node.parent
    assert node is not None and node.parent is not None, f"{marker_name!r} is on no page"
    return node.parent


def describe(node):
    try:
        return f"{node.getRoleName()} {shown_text(node.name)!r}"
    except Exception:
        return "(gone)"


def unreachable_controls(page, marker):
    """What keeps a keyboard user from a control of the page shown: not
    focusable, or never focused with Tab going round the window twice. The
    page tabs the focus passed are added to `tabs_reached`."""
    controls = controls_shown(page_content(*marker))
    assert len(controls) >= 3, f"{page}: only {[text for _, text in controls]} found"
    problems = [f"{page}: {text} is not focusable" for node, text in controls
                if not node.getState().contains(pyatspi.STATE_FOCUSABLE)]
    pending = [(node, text) for node, text in controls if node.getState().contains(pyatspi.STATE_FOCUSABLE)]
    if not focus_events_followed:
        pyatspi.Registry.registerEventListener(lambda event: event.detail1 and focus_events.append(event.source),
                                               "object:state-changed:focused")
        focus_events_followed.append(True)
    # The focus events say where each Tab went, however late the keys are handled.
    focus_events.clear()
    for _ in range(2 * (len(controls) + 10)):
        seen = len(focus_events)
        press_key(TAB)
        if not wait_until(lambda: pump_events() or len(focus_events) > seen, 10, 0.01):
            problems.append(f"{page}: Tab moved the focus nowhere after {describe(focus_events[-1]) if focus_events else 'the start'}")
            break
        pending = [(node, text) for node, text in pending if all(node != focused for focused in focus_events)]
        tabs_reached.update(shown_text(node.name) for node in focus_events if node.getRoleName() == "page tab")
        if not pending:
            break
    if pending:
        problems.append(f"{page}: not reached with Tab: {', '.join(text for _, text in pending)} "
                        f"(reached: {', '.join(describe(node) for node in focus_events[:len(controls) + 10])})")
    return problems


tabs_reached = set()


def keyboard_reaches_every_control():
    """On each page, every control shown is focusable and gets the focus
    with Tab alone; the page tabs (in the header) too."""
    session.ctl("resume")
    donate(EDITOR, "Kitchen plan", "Cupboards")
    # Handoff on: its rows are usable only then.
    session.call(HANDOFF[0], HANDOFF[1], "org.freedesktop.DBus.Properties.Set", HANDOFF[2], "Enabled", "<true>")
    wait_until(lambda: checked(require(frame, "check box", "Handoff")), 20)
    problems = []
    for page, marker in (("Handoff", ("check box", "Handoff")), ("History", ("entry", "Search history")),
                         ("Privacy", ("check box", "Pause history"))):
        show_page(page)
        if page == "History":
            search = require(frame, "entry", "Search history")
            search.queryEditableText().setTextContents("kitchen")
            require(frame, "label", "Kitchen plan")
        problems += unreachable_controls(page, marker)
    problems += [f"the page tab {tab} is not reached with Tab" for tab in ("Handoff", "History", "Privacy") if tab not in tabs_reached]
    assert not problems, "; ".join(problems)


# Each page's mnemonics (a window's page tabs are on every page), what each
# reaches and how its effect shows: a switch flips its service property, an
# entry or spin button takes the focus, a button opens its dialog.
PAGE_TABS = {"h": "Handoff", "s": "History", "p": "Privacy"}
PAGE_MARKERS = {"Handoff": ("check box", "Handoff"), "History": ("entry", "Search history"), "Privacy": ("check box", "Pause history")}
MNEMONICS = {
    "Handoff": [("d", "check box", "Handoff", (HANDOFF, "Enabled")),
                ("n", "text", "Device name", None),
                ("v", "check box", "Visible to nearby devices", (HANDOFF, "Discoverable")),
                ("w", "check box", "Notify when an activity can be continued", (HANDOFF, "NotifyContinuable")),
                ("a", "text", "Connect by address", None)],
    "History": [("o", "push button", "Forget the last hour?", None),
                ("d", "push button", "Forget the last day?", None),
                ("e", "push button", "Forget everything?", None)],
    "Privacy": [("a", "check box", "Pause history", (MANAGER, "Paused")),
                ("k", "spin button", "Keep history for (days)", None),
                ("r", "check box", "Include recent files", (MANAGER, "Bridges")),
                ("b", "push button", "Block an App…", None),
                ("t", "text", "Block a type", None)],
}


def has_focus(node, depth=0):
    if node.getState().contains(pyatspi.STATE_FOCUSED):
        return True
    return depth < 4 and any(has_focus(node.getChildAtIndex(i), depth + 1) for i in range(node.childCount))


def other_windows():
    windows = [app_root.getChildAtIndex(i) for i in range(app_root.childCount)]
    return [window for window in windows if window is not None and window != frame]


def underlined_letters(labels):
    """The mnemonic letter of each label, as GTK underlines it while Alt is
    held (the accessible names have lost their underscores): {letter: {text}}."""
    letters = {}
    for label in labels:
        try:
            text = label.queryText()
            offset = 0
            while offset < text.characterCount:
                attributes, start, end = text.getAttributeRun(offset, False)
                if any(attribute.startswith("underline:") and attribute != "underline:none" for attribute in attributes):
                    letters.setdefault(text.getText(start, start + 1).lower(), set()).add(label.name)
                offset = max(end, offset + 1)
        except Exception:
            continue
    return letters


def shown_mnemonics(page, tab_labels):
    """The mnemonics a person sees on `page` and the page tabs (`tab_labels`) while holding Alt."""
    labels = find_all(page, "label") + tab_labels
    pyatspi.Registry.generateKeyboardEvent(ALT, None, pyatspi.KEY_PRESS)
    try:
        # GTK shows them a moment after Alt goes down, on every label at once.
        wait_until(lambda: set(PAGE_TABS) <= set(underlined_letters(tab_labels)), 10, 0.02)
        return underlined_letters(labels)
    finally:
        pyatspi.Registry.generateKeyboardEvent(ALT, None, pyatspi.KEY_RELEASE)


def mnemonics_reach_every_primary_control():
    """On each page, no two controls share a mnemonic letter, and Alt+letter
    reaches each primary control: a switch flips (and flips back), an entry
    takes the focus (twice: a shared letter would move it on), a button acts
    (a "Forget" one asks first: cancelled with Escape, nothing is forgotten)."""
    session.ctl("resume")
    session.call(HANDOFF[0], HANDOFF[1], "org.freedesktop.DBus.Properties.Set", HANDOFF[2], "Enabled", "<true>")
    donate(EDITOR, "Mnemonic notes", "Kept through every cancelled forget")
    kept = lambda: "Mnemonic notes" in session.call(MANAGER[0], MANAGER[1], "org.example.UserActivity.Search", "mnemonic", "{}")
    assert kept(), "the donation was not saved"
    problems = []
    tab_labels = [label for tab in find_all(frame, "page tab") for label in find_all(tab, "label")]
    for page, controls in MNEMONICS.items():
        tab = require(frame, "page tab", page)
        press_mnemonic(next(letter for letter, title in PAGE_TABS.items() if title == page))
        if not wait_until(lambda: tab.getState().contains(pyatspi.STATE_SELECTED), 10, 0.05):
            problems.append(f"the mnemonic of the page tab {page} does not show it")
            show_page(page)
        content = page_content(*PAGE_MARKERS[page])
        letters = shown_mnemonics(content, tab_labels)
        problems += [f"{page}: Alt+{letter.upper()} is the mnemonic of {' and '.join(sorted(names))}"
                     for letter, names in sorted(letters.items()) if len(names) > 1]
        problems += [f"{page}: {name!r} does not show the mnemonic {letter.upper()}"
                     for letter, _, name, _ in controls if not any(text.startswith(name.rstrip("?…")) for text in letters.get(letter, ()))]
        problems += [f"the page tab {title} does not show the mnemonic {letter.upper()}"
                     for letter, title in PAGE_TABS.items() if title not in letters.get(letter, ())]
        for letter, role, name, target in controls:
            key = f"{page}: Alt+{letter.upper()} ({name})"
            if role == "push button":
                before = len(other_windows())
                press_mnemonic(letter)
                opened = wait_until(lambda: len(other_windows()) > before and other_windows(), 10, 0.05)
                if not opened:
                    problems.append(f"{key} opened nothing")
                    continue
                if name.endswith("?"):
                    if not wait_until(lambda: any(name in text for window in other_windows() for text in label_texts(window)), 10):
                        problems.append(f"{key} did not ask {name!r}")
                    press_key(ESCAPE)
                else:
                    if other_windows()[-1].name != name.rstrip("…"):
                        problems.append(f"{key} opened {other_windows()[-1].name!r}")
                    press(require(other_windows()[-1], "push button", "Close"))
                if not wait_until(lambda: len(other_windows()) == before, 10, 0.05):
                    problems.append(f"{key}: its window did not close")
                    for _ in other_windows():
                        press_key(ESCAPE)
                continue
            node = require(content, role, contains=name)
            wait_until(lambda: node.getState().contains(pyatspi.STATE_SENSITIVE), 10)
            if target is None:
                for attempt in ("", " again"):
                    press_mnemonic(letter)
                    if not wait_until(lambda: has_focus(node), 10, 0.02):
                        problems.append(f"{key}{attempt} did not focus it")
                        break
                continue
            service, property = target
            before = prop(service, property)
            press_mnemonic(letter)
            if not wait_until(lambda: prop(service, property) != before, 10, 0.02):
                problems.append(f"{key} did not flip {property} from {before}")
                continue
            press_mnemonic(letter)
            if not wait_until(lambda: prop(service, property) == before, 10, 0.02):
                problems.append(f"{key} again left {property} at {prop(service, property)}, not {before}")
    assert kept(), "a cancelled forget forgot"
    assert not problems, "; ".join(problems)


def spawn_fixture(target, *args):
    """Starts fixtures.py on `target`'s bus and waits for its READY line."""
    child = subprocess.Popen(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures.py"), *args],
                             env=target.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    target.children.append(child)
    line = child.stdout.readline().strip()
    if line != "READY":
        raise AssertionError(f"fixtures.py {' '.join(args)} did not start: {child.stderr.read()}")
    return child


def two_stacks_pair_follow_and_continue():
    """Pairing started in the app on A, confirmed there and by an agent on B;
    B's current activity shows in its row and Continue continues it on A.
    B's name has an underscore, which its row shows as text, not as a mnemonic."""
    other = Session("b", x_display=session.display, apps=APPS)
    try:
        b_handoff = lambda method, *args: other.call(HANDOFF[0], HANDOFF[1], method, *args)
        b_handoff("org.freedesktop.DBus.Properties.Set", HANDOFF[2], "DeviceName", "<'Laptop_B'>")
        b_handoff("org.freedesktop.DBus.Properties.Set", HANDOFF[2], "Enabled", "<true>")
        b_handoff("org.freedesktop.DBus.Properties.Set", HANDOFF[2], "Discoverable", "<true>")
        port = wait_until(lambda: int(other.get(*HANDOFF, "ListenPort").split()[-1].strip(">,)")), 20)
        agent = spawn_fixture(other, "agent")
        # The continuing app on A, D-Bus-activatable so that its continuation can be seen.
        session.write_app(EDITOR, [f"{EDITOR}.edit"], name="Editor")
        with open(os.path.join(session.xdg["XDG_DATA_HOME"], "applications", EDITOR + ".desktop"), "a") as entry:
            entry.write("DBusActivatable=true\n")
        editor = spawn_fixture(session, "app", EDITOR)

        show_page("Handoff")
        if prop(HANDOFF, "Enabled") != "(<true>,)":
            press(require(frame, "check box", "Handoff"))
        name = require(frame, "text", "Device name")
        name.queryEditableText().setTextContents("")
        type_text(name, "Desk A")
        press_key(RETURN)
        assert wait_until(lambda: prop(HANDOFF, "DeviceName") == "(<'Desk A'>,)", 20), prop(HANDOFF, "DeviceName")
        address = require(frame, "text", "Connect by address")
        type_text(address, f"127.0.0.1:{port}")
        press_key(RETURN)
        # GTK 4.8 drops a mnemonic's underscore from the names it gives, so the
        # row is found by the part that survives and then read in full.
        row = require(frame, "list item", contains="Laptop", timeout=30)
        title = find(row, "label", contains="Laptop").queryText()
        shown = (row.name, title.getText(0, title.characterCount))
        assert shown == ("Laptop_B", "Laptop_B"), f"B's name is shown as {shown} (row, title), not 'Laptop_B'"
        # Cancelled in the app first: the pairing fails and the app says why.
        press(require(row, "push button", contains="Pair"))
        press(dialog_button("Cancel", timeout=30))
        assert agent.stdout.readline().startswith("CODE"), "B was asked too"
        assert wait_until(lambda: any("failed: it was refused or cancelled" in text for text in label_texts(frame)), 30), \
            "the app does not say why pairing failed"
        assert wait_until(lambda: any("Not paired" in text for text in label_texts(row)), 10)
        press(require(row, "push button", contains="Pair"))
        dialog_code = wait_until(lambda: [text for text in label_texts(app_root) if "shows the same code" in text], 30)
        assert dialog_code, "the app shows the code"
        code_line = agent.stdout.readline().split()
        assert code_line[:1] == ["CODE"], code_line
        assert code_line[1][:3] + " " + code_line[1][3:] in dialog_code[0], (code_line, dialog_code)
        screenshot("pairing")
        press(dialog_button("Confirm"))
        assert wait_until(lambda: any("Paired · Reachable" in text for text in label_texts(row)), 30), \
            label_texts(row)

        # The name given in the app is what B knows this device by.
        b_devices = lambda: other.call(HANDOFF[0], HANDOFF[1], "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        assert wait_until(lambda: "'Desk A'" in b_devices(), 20), b_devices()
        current = other.spawn([os.path.join(BUILD, "useractivityctl"), "become-current", "--app-id", EDITOR,
                               "--title", "Budget sheet", f"{EDITOR}.edit"])
        assert wait_until(lambda: any("Budget sheet" in text for text in label_texts(row)), 30), \
            "B's current activity is shown"
        newer = other.spawn([os.path.join(BUILD, "useractivityctl"), "become-current", "--app-id", EDITOR,
                             "--title", "Travel plan", f"{EDITOR}.edit"])
        assert wait_until(lambda: any("Travel plan" in text for text in label_texts(row)), 30), \
            "the row follows B's current activity"
        screenshot("handoff-devices")
        # A device's buttons are reached by keyboard too.
        problems = unreachable_controls("Handoff", ("check box", "Handoff"))
        assert not problems, "; ".join(problems)
        press(require(row, "push button", contains="Continue"))
        line = editor.stdout.readline()
        assert "continue-activity" in line and "Travel plan" in line, line
        assert require(frame, "label", contains="Continued in"), "the app says where it was continued"
        for child in (current, newer):
            child.terminate()
    finally:
        other.close()


CHECKS = [handoff_switch_sets_enabled, device_name_reaches_service, discoverable_shows_time_left,
          privacy_switches_set_properties, block_an_app_from_the_installed_apps,
          cli_change_shows_in_app, mnemonic_toggles_pause, history_search_as_you_type, history_follows_changes_elsewhere, forget_one_removes_it, forget_this_app_removes_its_entries,
          keyboard_reaches_every_control, mnemonics_reach_every_primary_control,
          forget_everything_with_confirmation, unavailable_service_is_reported, two_stacks_pair_follow_and_continue]

passed = failed = 0
try:
    app_process = session.spawn([os.path.join(BUILD, "useractivity-settings")], GSK_RENDERER="cairo")
    app_root = wait_until(lambda: accessible_application("useractivity-settings"), 30, 0.2)
    if app_root is None:
        raise SystemExit(f"the app did not appear on the accessibility bus: {app_process.stderr.read1(4000)}; "
                         f"X server log: {open(session.x_log).read()[-2000:] if session.x_log else ''}")
    frame = require(app_root, "frame", timeout=30)
    # Keys go where the pointer is while no window manager gives focus.
    x, y, width, height = frame.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    pyatspi.Registry.generateMouseEvent(x + width // 2, y + 10, "abs")
    selected = set(options.only.split(",")) if options.only else None
    for check in CHECKS:
        if selected and check.__name__ not in selected:
            continue
        started = time.monotonic()
        try:
            check()
            passed += 1
            print(f"✔ {check.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
        except Exception as error:
            failed += 1
            print(f"✘ {check.__name__}: {error}", flush=True)
            traceback.print_exc()
            # A dialog left open by a failed check would take the next one's keys.
            for index in range(app_root.childCount):
                window = app_root.getChildAtIndex(index)
                if window is not None and window != frame:
                    press_key(ESCAPE)
        if app_process.poll() is not None:
            print(f"✘ the app exited ({app_process.returncode}): {app_process.stderr.read().decode()[-3000:]}")
            failed += 1
            break
finally:
    session.close()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
