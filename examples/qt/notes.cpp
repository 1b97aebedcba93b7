// SPDX-License-Identifier: Apache-2.0
//
// A small notes "app" in C++ with Qt 5 that uses org.example.UserActivity
// through classes qdbusxml2cpp generates from dbus/org.example.UserActivity.xml
// (see the Makefile; nothing generated is committed):
// OrgExampleUserActivityInterface, a proxy for the manager, and HandlerAdaptor,
// which exports the Handler interface of a QObject with matching slots.
//
//   1. names its app (RegisterApplication: a host process, not a Flatpak or Snap),
//   2. publishes the note it shows as the current activity (BecomeCurrent),
//   3. donates a shortcut to another note (Donate), found by Search,
//   4. exports a Handler object and registers it (RegisterHandler): when an
//      activity of its type is continued, it prints what it got and shows that
//      note, which becomes the current activity with the same title and user info.
//
// Each step prints one line on stdout (current / donated / ready / continued).
// The desktop entry com.example.NotesQt.desktop declares the type.
#include <QtCore/QCoreApplication>
#include <QtCore/QTimer>
#include <QtDBus/QtDBus>
#include <cstdio>

#include "ua_handler_adaptor.h"
#include "ua_proxies.h"

static const QString appID = QStringLiteral("com.example.NotesQt");
static const QString noteType = appID + QStringLiteral(".edit-note");
static const QString handlerPath = QStringLiteral("/com/example/NotesQt/Handler");
static const QString service = QStringLiteral("org.example.UserActivity");

static void say(const QString &line)
{
    std::printf("%s\n", qPrintable(line));
    std::fflush(stdout);
}

// Makes the note the session's current activity. userInfo is a QVariantMap, or
// the QDBusArgument of an a{sv} received from the bus (sent on unchanged).
static bool becomeCurrent(OrgExampleUserActivityInterface &manager, const QString &title, const QVariant &userInfo)
{
    QDBusPendingReply<QDBusObjectPath> reply = manager.BecomeCurrent(noteType, {
        {QStringLiteral("title"), title},
        {QStringLiteral("user-info"), userInfo},
    });
    reply.waitForFinished();
    if (reply.isError()) {
        std::fprintf(stderr, "notes-qt: BecomeCurrent failed: %s\n", qPrintable(reply.error().message()));
        return false;
    }
    say(QStringLiteral("current ") + reply.value().path());
    return true;
}

// The object behind HandlerAdaptor: the adaptor calls these slots by name.
// QDBusContext gives the calling message (to check who calls).
class Handler : public QObject, protected QDBusContext
{
    Q_OBJECT
public:
    explicit Handler(OrgExampleUserActivityInterface *manager) : manager(manager) {}

public Q_SLOTS:
    bool ContinueActivity(const QString &activityType, const QVariantMap &activity, const QVariantMap &platformData)
    {
        Q_UNUSED(platformData);
        if (!fromService())
            return false;
        const QString title = activity.value(QStringLiteral("title")).toString();
        // A nested a{sv} arrives as a QDBusArgument: every value keeps its D-Bus type.
        QVariant userInfo = activity.value(QStringLiteral("user-info"), QVariantMap());
        QVariantMap readable = qdbus_cast<QVariantMap>(userInfo);
        say(QStringLiteral("continued %1: %2 (user-info keys: %3)")
                .arg(activityType, title, QStringList(readable.keys()).join(QStringLiteral(", "))));
        // Answer first (true: this app took it), then show the note: it becomes current.
        QTimer::singleShot(0, this, [this, title, userInfo] { becomeCurrent(*manager, title, userInfo); });
        return true;
    }

    QVariantMap SaveActivity(const QDBusObjectPath &activity)
    {
        Q_UNUSED(activity);
        fromService();
        return {}; // nothing to refresh: the published data are current
    }

    void ContinuationStreamOpened(const QDBusObjectPath &activity, const QDBusUnixFileDescriptor &stream)
    {
        Q_UNUSED(activity);
        Q_UNUSED(stream);
        fromService(); // this app offers no continuation streams
    }

    void FailedToContinue(const QString &activityType, const QString &errorName, const QString &message)
    {
        if (fromService())
            say(QStringLiteral("failed %1: %2: %3").arg(activityType, errorName, message));
    }

private:
    // Only the service hands out continuations: refuse calls from anyone else.
    bool fromService()
    {
        const QString owner = connection().interface()->serviceOwner(service);
        if (!owner.isEmpty() && message().service() == owner)
            return true;
        sendErrorReply(QStringLiteral("org.freedesktop.DBus.Error.AccessDenied"),
                       QStringLiteral("only org.example.UserActivity may call this handler"));
        return false;
    }

    OrgExampleUserActivityInterface *manager;
};

static int fail(const char *step, const QDBusError &error)
{
    std::fprintf(stderr, "notes-qt: %s failed: %s\n", step, qPrintable(error.message()));
    return 1;
}

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    // Search and GetSuggestions answer aa{sv}: QList<QVariantMap> needs registering.
    qDBusRegisterMetaType<QList<QVariantMap>>();

    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!bus.isConnected())
        return fail("connecting to the session bus", bus.lastError());
    OrgExampleUserActivityInterface manager(service, QStringLiteral("/org/example/UserActivity"), bus);

    // 1. This connection speaks for appID (its desktop entry must be installed).
    QDBusPendingReply<> registered = manager.RegisterApplication(appID);
    registered.waitForFinished();
    if (registered.isError())
        return fail("RegisterApplication", registered.error());

    // 2. The note on screen is the current activity.
    if (!becomeCurrent(manager, QStringLiteral("Welcome note (Qt)"),
                       QVariantMap{{QStringLiteral("note"), QStringLiteral("welcome")},
                                   {QStringLiteral("line"), qlonglong(1)}}))
        return 1;

    // 3. A shortcut for search and suggestions.
    QDBusPendingReply<QString> donated = manager.Donate(noteType, {
        {QStringLiteral("title"), QStringLiteral("Groceries note (Qt)")},
        {QStringLiteral("keywords"), QStringList{QStringLiteral("shopping"), QStringLiteral("groceries")}},
        {QStringLiteral("eligible-for-search"), true},
        {QStringLiteral("persistent-identifier"), QStringLiteral("note:groceries")},
        {QStringLiteral("user-info"), QVariantMap{{QStringLiteral("note"), QStringLiteral("groceries")}}},
    });
    donated.waitForFinished();
    if (donated.isError())
        return fail("Donate", donated.error());
    say(QStringLiteral("donated ") + donated.value());

    // 4. Continuations of noteType come to this object (through its adaptor).
    Handler handler(&manager);
    new HandlerAdaptor(&handler); // owned by handler
    if (!bus.registerObject(handlerPath, &handler))
        return fail("exporting the handler", bus.lastError());
    QDBusPendingReply<> handlerRegistered = manager.RegisterHandler(QDBusObjectPath(handlerPath));
    handlerRegistered.waitForFinished();
    if (handlerRegistered.isError())
        return fail("RegisterHandler", handlerRegistered.error());
    say(QStringLiteral("ready ") + handlerPath);

    return app.exec(); // serve until terminated
}

#include "notes.moc"
